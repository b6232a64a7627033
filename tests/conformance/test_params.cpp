// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Provider parameters as `fi_info -p cxi -e` shows them: every FI_CXI_*
// variable named by fi_cxi(7) (the seed) is defined through fi_param_define
// and therefore listed by fi_getparams() with a help text (spec §4.1).
#include <cstring>
#include <map>

#include "fixture.hpp"

using namespace cxit;

namespace {

const char *const kSeedVariables[] = {
    "FI_CXI_ODP",
    "FI_CXI_ATS",
    "FI_CXI_ATS_MLOCK_MODE",
    "FI_CXI_RDZV_OFFLOAD",
    "FI_CXI_RDZV_THRESHOLD",
    "FI_CXI_FC_RECOVERY",
    "FI_CXI_RDZV_GET_MIN",
    "FI_CXI_RDZV_EAGER_SIZE",
    "FI_CXI_OFLOW_BUF_SIZE",
    "FI_CXI_OFLOW_BUF_COUNT",
    "FI_CXI_OPTIMIZED_MRS",
    "FI_CXI_LLRING_MODE",
    "FI_CXI_CQ_POLICY",
    "FI_CXI_DEFAULT_VNI",
    "FI_CXI_EQ_ACK_BATCH_SIZE",
    "FI_CXI_MSG_OFFLOAD",
    "FI_CXI_REQ_BUF_SIZE",
    "FI_CXI_REQ_BUF_COUNT",
    "FI_CXI_FC_RETRY_USEC_DELAY",
};
static_assert(sizeof(kSeedVariables) / sizeof(kSeedVariables[0]) == 19);

struct Param {
    fi_param_type type;
    std::string help;
};

class ParamsTest : public CxiTest {
  protected:
    // Variables defined by the cxi provider, keyed by environment name.
    std::map<std::string, Param> cxi_params() {
        // Parameters are defined when the provider initializes, which the core
        // does on the first fi_getinfo.
        get_info(EpOptions{}, "cxi0");
        fi_param *params = nullptr;
        int count = 0;
        CXIT_CHECK(fi_getparams(&params, &count));
        std::map<std::string, Param> m;
        for (int i = 0; i < count; i++) {
            if (!params[i].name || std::strncmp(params[i].name, "FI_CXI_", 7) != 0) continue;
            m[params[i].name] =
                Param{params[i].type, params[i].help_string ? params[i].help_string : ""};
        }
        fi_freeparams(params);
        return m;
    }
};

TEST_F(ParamsTest, AllSeedVariablesDefinedWithHelp) {
    auto m = cxi_params();
    for (const char *name : kSeedVariables) {
        auto it = m.find(name);
        if (it == m.end()) {
            ADD_FAILURE() << name << " is not defined (fi_info -p cxi -e would not list it)";
            continue;
        }
        EXPECT_FALSE(it->second.help.empty()) << name << " has no help text";
    }
}

TEST_F(ParamsTest, SeedVariableTypes) {
    auto m = cxi_params();
    // Types from spec §4.2 (seed-only variables from its seed table).
    const std::map<std::string, fi_param_type> types{
        {"FI_CXI_ODP", FI_PARAM_BOOL},
        {"FI_CXI_ATS", FI_PARAM_BOOL},
        {"FI_CXI_ATS_MLOCK_MODE", FI_PARAM_STRING},
        {"FI_CXI_RDZV_OFFLOAD", FI_PARAM_BOOL},
        {"FI_CXI_RDZV_THRESHOLD", FI_PARAM_SIZE_T},
        {"FI_CXI_FC_RECOVERY", FI_PARAM_BOOL},
        {"FI_CXI_RDZV_GET_MIN", FI_PARAM_SIZE_T},
        {"FI_CXI_RDZV_EAGER_SIZE", FI_PARAM_SIZE_T},
        {"FI_CXI_OFLOW_BUF_SIZE", FI_PARAM_SIZE_T},
        {"FI_CXI_OFLOW_BUF_COUNT", FI_PARAM_SIZE_T},
        {"FI_CXI_OPTIMIZED_MRS", FI_PARAM_BOOL},
        {"FI_CXI_LLRING_MODE", FI_PARAM_STRING},
        {"FI_CXI_CQ_POLICY", FI_PARAM_STRING},
        {"FI_CXI_DEFAULT_VNI", FI_PARAM_SIZE_T},
        {"FI_CXI_EQ_ACK_BATCH_SIZE", FI_PARAM_SIZE_T},
        {"FI_CXI_MSG_OFFLOAD", FI_PARAM_BOOL},
        {"FI_CXI_REQ_BUF_SIZE", FI_PARAM_SIZE_T},
        {"FI_CXI_REQ_BUF_COUNT", FI_PARAM_INT},
        {"FI_CXI_FC_RETRY_USEC_DELAY", FI_PARAM_INT},
    };
    for (const auto &[name, type] : types) {
        auto it = m.find(name);
        ASSERT_NE(m.end(), it) << name;
        EXPECT_EQ(type, it->second.type) << name;
    }
}

TEST_F(ParamsTest, NoDuplicateDefinitions) {
    get_info(EpOptions{}, "cxi0");
    fi_param *params = nullptr;
    int count = 0;
    ASSERT_OK(fi_getparams(&params, &count));
    std::map<std::string, int> seen;
    for (int i = 0; i < count; i++)
        if (params[i].name && std::strncmp(params[i].name, "FI_CXI_", 7) == 0)
            seen[params[i].name]++;
    fi_freeparams(params);
    for (const auto &[name, n] : seen)
        EXPECT_EQ(1, n) << name << " defined " << n << " times";
}

}  // namespace
