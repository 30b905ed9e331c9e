#pragma once
// A registered consumer buffer for the libdat API tests (api_fixture.hpp and
// conn_side.hpp both use it).

#include <dat/udat.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dpdat_test {

// An LMR over a consumer buffer.
struct Mem {
  std::vector<uint8_t> buf;
  DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT lctx = 0;
  DAT_RMR_CONTEXT rctx = 0;
  DAT_VADDR va() const { return reinterpret_cast<DAT_VADDR>(buf.data()); }
  DAT_LMR_TRIPLET iov(size_t off, size_t len) const {
    DAT_LMR_TRIPLET t{};
    t.lmr_context = lctx;
    t.virtual_address = va() + off;
    t.segment_length = len;
    return t;
  }
};

inline DAT_RETURN reg(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, size_t len, DAT_MEM_PRIV_FLAGS priv,
                      Mem* m) {
  m->buf.assign(len == 0 ? 1 : len, 0);
  DAT_REGION_DESCRIPTION r;
  r.for_va = m->buf.data();
  DAT_VLEN rsize = 0;
  DAT_VADDR raddr = 0;
  return dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, r, m->buf.size(), pz, priv, &m->lmr, &m->lctx,
                        &m->rctx, &rsize, &raddr);
}

}  // namespace dpdat_test
