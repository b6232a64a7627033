// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* exit_while_polling <provider> [rdm|dgram]: opens an endpoint, lets two threads poll
 * its CQ and calls exit(0) from the main thread, as an application does when an RPC
 * tells it to quit (Mercury's kill test). libfabric's exit-time destructor closes the
 * providers while those threads are still inside fi_cq_read: the process must still
 * exit cleanly (status 0), not crash.
 */
#include <pthread.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(call)                                                \
    do {                                                           \
        int rc_ = (call);                                          \
        if (rc_) {                                                 \
            fprintf(stderr, "%s: %s\n", #call, fi_strerror(-rc_)); \
            exit(2);                                               \
        }                                                          \
    } while (0)

static struct fid_cq *cq;

static void *poll_forever(void *arg) {
    (void)arg;
    struct fi_cq_msg_entry e[8];
    for (;;)
        fi_cq_read(cq, e, 8);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s <provider> [rdm|dgram]\n", argv[0]);
        return 2;
    }
    struct fi_info *hints = fi_allocinfo(), *info;
    hints->fabric_attr->prov_name = strdup(argv[1]);
    hints->ep_attr->type = argc > 2 && !strcmp(argv[2], "dgram") ? FI_EP_DGRAM : FI_EP_RDM;
    hints->caps = FI_MSG;
    hints->mode = ~0ULL;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    CHECK(fi_getinfo(FI_VERSION(1, 15), NULL, NULL, 0, hints, &info));
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_ep *ep;
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_MSG};
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
    CHECK(fi_domain(fabric, info, &domain, NULL));
    CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
    CHECK(fi_av_open(domain, &av_attr, &av, NULL));
    CHECK(fi_endpoint(domain, info, &ep, NULL));
    CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    CHECK(fi_ep_bind(ep, &av->fid, 0));
    CHECK(fi_enable(ep));
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, poll_forever, NULL);
    usleep(20000);
    exit(0);
}
