// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* CHECK for the MPI test programs: on a false condition, says which rank failed and why,
 * then aborts the whole job. The program defines `rank`. */
#ifndef SOFTNIC_MPI_FAIL_H
#define SOFTNIC_MPI_FAIL_H

#include <mpi.h>
#include <stdio.h>

#define CHECK(cond, ...)                        \
    do {                                        \
        if (!(cond)) {                          \
            fprintf(stderr, "rank %d: ", rank); \
            fprintf(stderr, __VA_ARGS__);       \
            fprintf(stderr, "\n");              \
            MPI_Abort(MPI_COMM_WORLD, 1);       \
        }                                       \
    } while (0)

#endif
