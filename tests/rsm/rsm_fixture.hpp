// The fixture of the `rsm` tests: the RSMAPI through <rsm/rsmapi.h> only,
// over the in-process net_ring link: controller dpdat0 (node 0x4D01,
// 192.168.77.1) exports a 1 MiB segment, controller dpdat1 (node 0x4D02,
// 192.168.77.2) imports.
#pragma once
#include <gtest/gtest.h>
#include <rsm/rsmapi.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace rsm_test {

constexpr rsm_node_id_t kExpNode = (77u << 8) | 1u;  // low 16 bits of 192.168.77.1
constexpr rsm_node_id_t kImpNode = (77u << 8) | 2u;
constexpr size_t kSegBytes = 1u << 20;

inline uint8_t pattern(size_t i, unsigned seed) {
  return static_cast<uint8_t>(i * 131u + seed * 17u + 7u);
}

class Rsm : public ::testing::Test {
 protected:
  void SetUp() override {
    umask(022);  // the exporter's creation mode for ACL-less segments: 0644
    ASSERT_EQ(rsm_get_controller(const_cast<char*>("dpdat0"), &exp_), RSM_SUCCESS);
    ASSERT_EQ(rsm_get_controller(const_cast<char*>("dpdat1"), &imp_), RSM_SUCCESS);
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    mem_ = static_cast<uint8_t*>(aligned_alloc(page_, kSegBytes));
    ASSERT_NE(mem_, nullptr);
    std::memset(mem_, 0, kSegBytes);
    ASSERT_EQ(rsm_memseg_export_create(exp_, &seg_, mem_, kSegBytes, RSM_ALLOW_REBIND),
              RSM_SUCCESS);
  }
  void TearDown() override {
    for (auto* im : imports_) {
      (void)rsm_memseg_import_unmap(im);
      (void)rsm_memseg_import_disconnect(im);
    }
    if (seg_ != nullptr) {
      EXPECT_EQ(rsm_memseg_export_destroy(seg_), RSM_SUCCESS);
    }
    if (exp_ != nullptr) {
      EXPECT_EQ(rsm_release_controller(exp_), RSM_SUCCESS);
    }
    if (imp_ != nullptr) {
      EXPECT_EQ(rsm_release_controller(imp_), RSM_SUCCESS);
    }
    free(mem_);
  }
  rsm_memseg_id_t publish(std::vector<rsmapi_access_entry_t> acl = {},
                          rsm_memseg_id_t id = 0x400001) {
    EXPECT_EQ(rsm_memseg_export_publish(seg_, &id, acl.empty() ? nullptr : acl.data(),
                                        static_cast<unsigned>(acl.size())),
              RSM_SUCCESS);
    return id;
  }
  int connect(rsm_memseg_id_t id, rsm_permission_t perm, rsm_memseg_import_handle_t* out) {
    const int e = rsm_memseg_import_connect(imp_, kExpNode, id, perm, out);
    if (e == RSM_SUCCESS) imports_.push_back(*out);
    return e;
  }
  void disconnect(rsm_memseg_import_handle_t im) {
    EXPECT_EQ(rsm_memseg_import_disconnect(im), RSM_SUCCESS);
    std::erase(imports_, im);
  }

  rsmapi_controller_handle_t exp_ = nullptr, imp_ = nullptr;
  rsm_memseg_export_handle_t seg_ = nullptr;
  std::vector<rsm_memseg_import_handle_t> imports_;
  uint8_t* mem_ = nullptr;
  size_t page_ = 4096;
};

}  // namespace rsm_test
