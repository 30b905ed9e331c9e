// The uDAPL 1.2 API of libdat, exercised through the public header only
// (fixture and helpers: api_fixture.hpp).

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "api_fixture.hpp"

namespace {

// ============================================================= 1. IA, registry

TEST_F(api, IaOpenUnknownName) {
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
  EXPECT_EQ(type_of(open_ia("no-such-ia-xyz", &ia, &async)), DAT_PROVIDER_NOT_FOUND);
}

TEST_F(api, IaQueryAddressLimitsProvider) {
  DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
  DAT_IA_ATTR a;
  DAT_PROVIDER_ATTR p;
  ASSERT_EQ(dat_ia_query(ia0_, &async, DAT_IA_FIELD_ALL, &a, DAT_PROVIDER_FIELD_ALL, &p),
            DAT_SUCCESS);
  EXPECT_EQ(async, async0_);
  ASSERT_NE(a.ia_address_ptr, nullptr);
  EXPECT_EQ(a.ia_address_ptr->sa_family, AF_INET);
  EXPECT_EQ(ip_of(a.ia_address_ptr), "192.168.77.1");
  EXPECT_GT(a.max_eps, 0);
  EXPECT_GT(a.max_dto_per_ep, 0);
  EXPECT_GT(a.max_evds, 0);
  EXPECT_GT(a.max_evd_qlen, 0);
  EXPECT_GE(a.max_iov_segments_per_dto, 1);
  EXPECT_GT(a.max_lmrs, 0);
  EXPECT_GT(a.max_lmr_block_size, 0u);
  EXPECT_GT(a.max_pzs, 0);
  EXPECT_GT(a.max_message_size, 0u);
  EXPECT_GT(a.max_rdma_size, 0u);
  EXPECT_GT(a.max_rmrs, 0);
  EXPECT_GE(a.max_rdma_read_per_ep_in, 1);
  EXPECT_GE(a.max_rdma_read_per_ep_out, 1);
  EXPECT_EQ(p.dapl_version_major, 1u);
  EXPECT_EQ(p.dapl_version_minor, 2u);
  EXPECT_EQ(p.is_thread_safe, DAT_TRUE);
  EXPECT_GE(p.max_private_data_size, 60);

  DAT_IA_ATTR a1;
  ASSERT_EQ(dat_ia_query(ia1_, nullptr, DAT_IA_FIELD_IA_ADDRESS_PTR, &a1, 0, nullptr), DAT_SUCCESS);
  EXPECT_EQ(ip_of(a1.ia_address_ptr), "192.168.77.2");
}

TEST_F(api, IaQueryNullOutputsWithZeroMasks) {
  EXPECT_EQ(dat_ia_query(ia0_, nullptr, 0, nullptr, 0, nullptr), DAT_SUCCESS);
  DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
  EXPECT_EQ(dat_ia_query(ia0_, &async, 0, nullptr, 0, nullptr), DAT_SUCCESS);
  EXPECT_EQ(async, async0_);
}

TEST_F(api, RegistryListsBothBuiltins) {
  std::vector<DAT_PROVIDER_INFO> infos(64);
  std::vector<DAT_PROVIDER_INFO*> ptrs;
  for (auto& i : infos) ptrs.push_back(&i);
  DAT_COUNT n = -1;
  ASSERT_EQ(dat_registry_list_providers(static_cast<DAT_COUNT>(ptrs.size()), &n, ptrs.data()),
            DAT_SUCCESS);
  ASSERT_GE(n, 2);
  bool has0 = false, has1 = false;
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    has0 |= std::string(infos[i].ia_name) == "dpdat0";
    has1 |= std::string(infos[i].ia_name) == "dpdat1";
    if (std::string(infos[i].ia_name) == "dpdat0") {
      EXPECT_EQ(infos[i].dapl_version_major, 1u);
      EXPECT_EQ(infos[i].dapl_version_minor, 2u);
    }
  }
  EXPECT_TRUE(has0);
  EXPECT_TRUE(has1);
}

TEST_F(api, Strerror) {
  DAT_EVD_HANDLE e = evd(ia0_, DAT_EVD_SOFTWARE_FLAG);
  DAT_EVENT ev;
  const DAT_RETURN real = dat_evd_dequeue(e, &ev);  // an empty queue
  ASSERT_EQ(real, DAT_QUEUE_EMPTY);
  const char* major = nullptr;
  const char* minor = nullptr;
  ASSERT_EQ(dat_strerror(real, &major, &minor), DAT_SUCCESS);
  EXPECT_NE(major, nullptr);
  EXPECT_NE(minor, nullptr);
  // A real error with class and subtype bits.
  const DAT_RETURN bad = dat_pz_free(e);  // wrong handle type
  ASSERT_EQ(type_of(bad), DAT_INVALID_HANDLE);
  major = minor = nullptr;
  ASSERT_EQ(dat_strerror(bad, &major, &minor), DAT_SUCCESS);
  ASSERT_NE(major, nullptr);
  EXPECT_NE(minor, nullptr);
  EXPECT_NE(std::string(major).find("INVALID_HANDLE"), std::string::npos) << major;
  // Garbage: neither a known type nor a known subtype.
  EXPECT_EQ(type_of(dat_strerror(static_cast<DAT_RETURN>(0x8ABC7777u), &major, &minor)),
            DAT_INVALID_PARAMETER);
}

TEST_F(api, HandleTypesOfEveryKind) {
  Side cli, srv;
  ASSERT_NO_FATAL_FAILURE(make_side(ia0_, &cli));
  ASSERT_NO_FATAL_FAILURE(make_side(ia1_, &srv));
  Mem m;
  ASSERT_EQ(reg(ia0_, cli.pz, 4096, DAT_MEM_PRIV_ALL_FLAG, &m), DAT_SUCCESS);
  DAT_RMR_HANDLE rmr = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_rmr_create(cli.pz, &rmr), DAT_SUCCESS);
  DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_cno_create(ia0_, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno), DAT_SUCCESS);
  DAT_EP_HANDLE rsp_ep = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_ep_create(ia1_, srv.pz, srv.recv_evd, srv.req_evd, srv.conn_evd, nullptr, &rsp_ep),
            DAT_SUCCESS);
  DAT_RSP_HANDLE rsp = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_rsp_create(ia1_, 999, rsp_ep, srv.cr_evd, &rsp), DAT_SUCCESS);
  DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_psp_create(ia1_, kQual, srv.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), DAT_SUCCESS);
  ASSERT_EQ(connect_to(cli, "192.168.77.2", kQual), DAT_SUCCESS);
  DAT_CR_HANDLE cr = wait_cr(srv);
  ASSERT_NE(cr, DAT_HANDLE_NULL);

  const struct {
    DAT_HANDLE h;
    DAT_HANDLE_TYPE t;
  } cases[] = {
      {ia0_, DAT_HANDLE_TYPE_IA},
      {cli.ep, DAT_HANDLE_TYPE_EP},
      {cli.conn_evd, DAT_HANDLE_TYPE_EVD},
      {async0_, DAT_HANDLE_TYPE_EVD},
      {m.lmr, DAT_HANDLE_TYPE_LMR},
      {psp, DAT_HANDLE_TYPE_PSP},
      {cli.pz, DAT_HANDLE_TYPE_PZ},
      {rmr, DAT_HANDLE_TYPE_RMR},
      {rsp, DAT_HANDLE_TYPE_RSP},
      {cno, DAT_HANDLE_TYPE_CNO},
      {cr, DAT_HANDLE_TYPE_CR},
  };
  for (const auto& c : cases) {
    DAT_HANDLE_TYPE t = DAT_HANDLE_TYPE_SRQ;
    EXPECT_EQ(dat_get_handle_type(c.h, &t), DAT_SUCCESS);
    EXPECT_EQ(t, c.t);
  }
  int not_a_handle = 0;
  DAT_HANDLE_TYPE t;
  EXPECT_EQ(type_of(dat_get_handle_type(&not_a_handle, &t)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_get_handle_type(DAT_HANDLE_NULL, &t)), DAT_INVALID_HANDLE);
}

TEST_F(api, ConsumerContext) {
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_pz_create(ia0_, &pz), DAT_SUCCESS);
  DAT_EVD_HANDLE e = evd(ia0_, DAT_EVD_SOFTWARE_FLAG);
  int anchor = 0;
  DAT_CONTEXT c;
  c.as_ptr = &anchor;
  ASSERT_EQ(dat_set_consumer_context(pz, c), DAT_SUCCESS);
  c.as_64 = 0x1122334455667788ULL;
  ASSERT_EQ(dat_set_consumer_context(e, c), DAT_SUCCESS);
  c.as_64 = 42;
  ASSERT_EQ(dat_set_consumer_context(ia0_, c), DAT_SUCCESS);
  DAT_CONTEXT got;
  got.as_64 = 0;
  ASSERT_EQ(dat_get_consumer_context(pz, &got), DAT_SUCCESS);
  EXPECT_EQ(got.as_ptr, &anchor);
  ASSERT_EQ(dat_get_consumer_context(e, &got), DAT_SUCCESS);
  EXPECT_EQ(got.as_64, 0x1122334455667788ULL);
  ASSERT_EQ(dat_get_consumer_context(ia0_, &got), DAT_SUCCESS);
  EXPECT_EQ(got.as_64, 42u);
  int not_a_handle = 0;
  EXPECT_EQ(type_of(dat_set_consumer_context(&not_a_handle, c)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_get_consumer_context(&not_a_handle, &got)), DAT_INVALID_HANDLE);
}

// ======================================================== 2. handle validation

TEST_F(api, WrongTypeAndFreedHandles) {
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_pz_create(ia0_, &pz), DAT_SUCCESS);
  DAT_EVD_HANDLE sw = evd(ia0_, DAT_EVD_SOFTWARE_FLAG);
  DAT_EVD_HANDLE conn = evd(ia0_, DAT_EVD_CONNECTION_FLAG);
  DAT_EVD_HANDLE cr_evd = evd(ia0_, DAT_EVD_CR_FLAG);
  DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_cno_create(ia0_, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno), DAT_SUCCESS);
  Mem m;
  ASSERT_EQ(reg(ia0_, pz, 4096, DAT_MEM_PRIV_ALL_FLAG, &m), DAT_SUCCESS);
  DAT_RMR_HANDLE rmr = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_rmr_create(pz, &rmr), DAT_SUCCESS);
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL, ep2 = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_ep_create(ia0_, pz, DAT_HANDLE_NULL, DAT_HANDLE_NULL, conn, nullptr, &ep),
            DAT_SUCCESS);
  ASSERT_EQ(dat_ep_create(ia0_, pz, DAT_HANDLE_NULL, DAT_HANDLE_NULL, conn, nullptr, &ep2),
            DAT_SUCCESS);
  DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_psp_create(ia0_, 77, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), DAT_SUCCESS);
  DAT_RSP_HANDLE rsp = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_rsp_create(ia0_, 78, ep2, cr_evd, &rsp), DAT_SUCCESS);

  DAT_EVENT ev;
  DAT_PZ_PARAM pzp;
  DAT_EVD_PARAM evp;
  DAT_LMR_PARAM lp;
  DAT_RMR_PARAM rp;
  DAT_EP_PARAM epp;
  DAT_PSP_PARAM pp;
  DAT_RSP_PARAM sp;
  DAT_CR_PARAM crp;
  DAT_CNO_PARAM cp;
  DAT_EVD_HANDLE got_evd;
  DAT_PZ_HANDLE new_pz;
  DAT_EVD_HANDLE new_evd;
  DAT_LMR_TRIPLET t = m.iov(0, 16);
  DAT_RMR_TRIPLET rt{};
  DAT_RMR_CONTEXT rc = 0;
  DAT_RMR_COOKIE rck;
  rck.as_64 = 0;
  DAT_EP_HANDLE new_ep;

  // Handles of another type.
  EXPECT_EQ(type_of(dat_ia_query(pz, nullptr, 0, nullptr, 0, nullptr)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_ia_close(sw, DAT_CLOSE_ABRUPT_FLAG)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_pz_create(sw, &new_pz)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_pz_query(sw, DAT_PZ_FIELD_ALL, &pzp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_pz_free(sw)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_evd_create(pz, 4, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &new_evd)),
            DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_evd_dequeue(pz, &ev)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_evd_wait(cno, 1000, 1, &ev, nullptr)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_evd_query(ep, DAT_EVD_FIELD_ALL, &evp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_evd_free(pz)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_cno_wait(sw, 1000, &got_evd)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_cno_free(sw)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_lmr_query(rmr, DAT_LMR_FIELD_ALL, &lp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_lmr_free(ep)), DAT_INVALID_HANDLE);
  DAT_RMR_HANDLE tmp_rmr = DAT_HANDLE_NULL;
  EXPECT_EQ(type_of(dat_rmr_create(ia0_, &tmp_rmr)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_rmr_query(m.lmr, DAT_RMR_FIELD_ALL, &rp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_rmr_free(m.lmr)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_rmr_bind(rmr, &t, DAT_MEM_PRIV_REMOTE_WRITE_FLAG, pz, rck,
                                 DAT_COMPLETION_DEFAULT_FLAG, &rc)),
            DAT_INVALID_HANDLE);
  EXPECT_EQ(
      type_of(dat_ep_create(ia0_, sw, DAT_HANDLE_NULL, DAT_HANDLE_NULL, conn, nullptr, &new_ep)),
      DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_ep_query(pz, DAT_EP_FIELD_ALL, &epp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_ep_post_send(pz, 1, &t, cookie(1), DAT_COMPLETION_DEFAULT_FLAG)),
            DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_ep_post_recv(sw, 1, &t, cookie(1), DAT_COMPLETION_DEFAULT_FLAG)),
            DAT_INVALID_HANDLE);
  EXPECT_EQ(
      type_of(dat_ep_post_rdma_write(m.lmr, 1, &t, cookie(1), &rt, DAT_COMPLETION_DEFAULT_FLAG)),
      DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_ep_free(psp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_psp_query(rsp, DAT_PSP_FIELD_ALL, &pp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_psp_free(rsp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_rsp_query(psp, DAT_RSP_FIELD_ALL, &sp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_rsp_free(psp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_cr_query(ep, DAT_CR_FIELD_ALL, &crp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_cr_accept(pz, ep, 0, nullptr)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_cr_reject(sw)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_cno_query(sw, DAT_CNO_FIELD_ALL, &cp)), DAT_INVALID_HANDLE);

  // Free everything, then use every freed handle.
  ASSERT_EQ(dat_psp_free(psp), DAT_SUCCESS);
  ASSERT_EQ(dat_rsp_free(rsp), DAT_SUCCESS);
  ASSERT_EQ(dat_ep_free(ep), DAT_SUCCESS);
  ASSERT_EQ(dat_ep_free(ep2), DAT_SUCCESS);
  ASSERT_EQ(dat_rmr_free(rmr), DAT_SUCCESS);
  ASSERT_EQ(dat_lmr_free(m.lmr), DAT_SUCCESS);
  ASSERT_EQ(dat_cno_free(cno), DAT_SUCCESS);
  ASSERT_EQ(dat_evd_free(sw), DAT_SUCCESS);
  ASSERT_EQ(dat_evd_free(conn), DAT_SUCCESS);
  ASSERT_EQ(dat_evd_free(cr_evd), DAT_SUCCESS);
  ASSERT_EQ(dat_pz_free(pz), DAT_SUCCESS);

  DAT_HANDLE_TYPE ht;
  DAT_CONTEXT ctx;
  for (DAT_HANDLE h : {pz, sw, cno, m.lmr, rmr, ep, psp, rsp}) {
    EXPECT_EQ(type_of(dat_get_handle_type(h, &ht)), DAT_INVALID_HANDLE);
    EXPECT_EQ(type_of(dat_get_consumer_context(h, &ctx)), DAT_INVALID_HANDLE);
  }
  EXPECT_EQ(type_of(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &pzp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_pz_free(pz)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_rmr_create(pz, &tmp_rmr)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_evd_dequeue(sw, &ev)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_evd_wait(sw, 1000, 1, &ev, nullptr)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_evd_post_se(sw, &ev)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_evd_query(sw, DAT_EVD_FIELD_ALL, &evp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_evd_resize(sw, 8)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_evd_enable(sw)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_evd_disable(sw)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_evd_set_unwaitable(sw)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_evd_clear_unwaitable(sw)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_evd_modify_cno(sw, DAT_HANDLE_NULL)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_evd_free(sw)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_cno_wait(cno, 1000, &got_evd)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_cno_query(cno, DAT_CNO_FIELD_ALL, &cp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_cno_free(cno)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_lmr_query(m.lmr, DAT_LMR_FIELD_ALL, &lp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_lmr_free(m.lmr)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_rmr_query(rmr, DAT_RMR_FIELD_ALL, &rp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_rmr_free(rmr)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_ep_query(ep, DAT_EP_FIELD_ALL, &epp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_ep_post_send(ep, 1, &t, cookie(1), DAT_COMPLETION_DEFAULT_FLAG)),
            DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_ep_post_recv(ep, 1, &t, cookie(1), DAT_COMPLETION_DEFAULT_FLAG)),
            DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(connect_to(Side{DAT_HANDLE_NULL, DAT_HANDLE_NULL, DAT_HANDLE_NULL,
                                    DAT_HANDLE_NULL, DAT_HANDLE_NULL, DAT_HANDLE_NULL, ep},
                               "192.168.77.2", kQual)),
            DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_ep_reset(ep)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_ep_free(ep)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_psp_query(psp, DAT_PSP_FIELD_ALL, &pp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_psp_free(psp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_rsp_query(rsp, DAT_RSP_FIELD_ALL, &sp)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_rsp_free(rsp)), DAT_INVALID_HANDLE);
}

// ===================================================================== 3. LMR

TEST_F(api, PzFreeWhileLmrUsesIt) {
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_pz_create(ia0_, &pz), DAT_SUCCESS);
  Mem m;
  ASSERT_EQ(reg(ia0_, pz, 4096, DAT_MEM_PRIV_LOCAL_READ_FLAG, &m), DAT_SUCCESS);
  EXPECT_EQ(type_of(dat_pz_free(pz)), DAT_INVALID_STATE);
  ASSERT_EQ(dat_lmr_free(m.lmr), DAT_SUCCESS);
  EXPECT_EQ(dat_pz_free(pz), DAT_SUCCESS);
}

TEST_F(api, LmrVirtualContextsAndQuery) {
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_pz_create(ia0_, &pz), DAT_SUCCESS);
  std::vector<uint8_t> buf(3 * 4096 + 100);
  DAT_REGION_DESCRIPTION r;
  r.for_va = buf.data();
  DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT lctx = 0;
  DAT_RMR_CONTEXT rctx = 0xFFFFFFFFu;
  DAT_VLEN rsize = 0;
  DAT_VADDR raddr = 0;
  // Local privileges only: no rmr_context is generated (0 returned).
  const auto local =
      static_cast<DAT_MEM_PRIV_FLAGS>(DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG);
  ASSERT_EQ(dat_lmr_create(ia0_, DAT_MEM_TYPE_VIRTUAL, r, buf.size(), pz, local, &lmr, &lctx, &rctx,
                           &rsize, &raddr),
            DAT_SUCCESS);
  EXPECT_EQ(rctx, 0u);
  EXPECT_GE(rsize, buf.size());
  EXPECT_LE(raddr, reinterpret_cast<DAT_VADDR>(buf.data()));
  EXPECT_GE(raddr + rsize, reinterpret_cast<DAT_VADDR>(buf.data()) + buf.size());

  // Remote privileges: a non-zero rmr_context.
  DAT_LMR_HANDLE lmr2 = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT lctx2 = 0;
  DAT_RMR_CONTEXT rctx2 = 0;
  ASSERT_EQ(dat_lmr_create(ia0_, DAT_MEM_TYPE_VIRTUAL, r, buf.size(), pz, DAT_MEM_PRIV_ALL_FLAG,
                           &lmr2, &lctx2, &rctx2, &rsize, &raddr),
            DAT_SUCCESS);
  EXPECT_NE(rctx2, 0u);
  EXPECT_NE(lctx2, lctx);

  DAT_LMR_PARAM p;
  ASSERT_EQ(dat_lmr_query(lmr2, DAT_LMR_FIELD_ALL, &p), DAT_SUCCESS);
  EXPECT_EQ(p.ia_handle, ia0_);
  EXPECT_EQ(p.mem_type, DAT_MEM_TYPE_VIRTUAL);
  EXPECT_EQ(p.region_desc.for_va, buf.data());
  EXPECT_EQ(p.length, buf.size());
  EXPECT_EQ(p.pz_handle, pz);
  EXPECT_EQ(p.mem_priv, DAT_MEM_PRIV_ALL_FLAG);
  EXPECT_EQ(p.lmr_context, lctx2);
  EXPECT_EQ(p.rmr_context, rctx2);
  EXPECT_EQ(p.registered_size, rsize);
  EXPECT_EQ(p.registered_address, raddr);
  ASSERT_EQ(dat_lmr_query(lmr,
                          static_cast<DAT_LMR_PARAM_MASK>(DAT_LMR_FIELD_RMR_CONTEXT |
                                                          DAT_LMR_FIELD_LMR_CONTEXT),
                          &p),
            DAT_SUCCESS);
  EXPECT_EQ(p.lmr_context, lctx);
  EXPECT_EQ(p.rmr_context, 0u);
}

TEST_F(api, LmrOverLmrWithItsOwnPz) {
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL, pz2 = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_pz_create(ia0_, &pz), DAT_SUCCESS);
  ASSERT_EQ(dat_pz_create(ia0_, &pz2), DAT_SUCCESS);
  Mem parent;
  ASSERT_EQ(reg(ia0_, pz, 8192, DAT_MEM_PRIV_ALL_FLAG, &parent), DAT_SUCCESS);
  DAT_REGION_DESCRIPTION r;
  r.for_lmr_handle = parent.lmr;
  DAT_LMR_HANDLE child = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT lctx = 0;
  DAT_RMR_CONTEXT rctx = 0;
  DAT_VLEN rsize = 0;
  DAT_VADDR raddr = 0;
  ASSERT_EQ(dat_lmr_create(ia0_, DAT_MEM_TYPE_LMR, r, 0 /* ignored */, pz2,
                           DAT_MEM_PRIV_LOCAL_READ_FLAG, &child, &lctx, &rctx, &rsize, &raddr),
            DAT_SUCCESS);
  EXPECT_NE(lctx, parent.lctx);
  EXPECT_GE(rsize, 8192u);
  EXPECT_LE(raddr, parent.va());
  DAT_LMR_PARAM p;
  ASSERT_EQ(dat_lmr_query(child, DAT_LMR_FIELD_ALL, &p), DAT_SUCCESS);
  EXPECT_EQ(p.mem_type, DAT_MEM_TYPE_LMR);
  EXPECT_EQ(p.region_desc.for_lmr_handle, parent.lmr);
  EXPECT_EQ(p.pz_handle, pz2);
  EXPECT_EQ(p.lmr_context, lctx);
  EXPECT_EQ(p.mem_priv, DAT_MEM_PRIV_LOCAL_READ_FLAG);

  EXPECT_EQ(type_of(dat_lmr_free(parent.lmr)), DAT_INVALID_STATE);
  EXPECT_EQ(type_of(dat_pz_free(pz2)), DAT_INVALID_STATE);
  ASSERT_EQ(dat_lmr_free(child), DAT_SUCCESS);
  EXPECT_EQ(dat_lmr_free(parent.lmr), DAT_SUCCESS);
  EXPECT_EQ(dat_pz_free(pz2), DAT_SUCCESS);
}

TEST_F(api, LmrSharedVirtualBinaryCookie) {
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_pz_create(ia0_, &pz), DAT_SUCCESS);
  std::vector<uint8_t> buf(8192);
  char id[DAT_LMR_COOKIE_SIZE];
  for (int i = 0; i < DAT_LMR_COOKIE_SIZE; ++i)
    id[i] = static_cast<char>(i % 3 == 0 ? 0 : 0xA0 + i);
  DAT_REGION_DESCRIPTION r;
  r.for_shared_memory.virtual_address = buf.data();
  r.for_shared_memory.shared_memory_id = &id;
  DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT lctx = 0;
  DAT_RMR_CONTEXT rctx = 0;
  DAT_VLEN rsize = 0;
  DAT_VADDR raddr = 0;
  ASSERT_EQ(dat_lmr_create(ia0_, DAT_MEM_TYPE_SHARED_VIRTUAL, r, buf.size(), pz,
                           DAT_MEM_PRIV_ALL_FLAG, &lmr, &lctx, &rctx, &rsize, &raddr),
            DAT_SUCCESS);
  EXPECT_GE(rsize, buf.size());
  DAT_LMR_PARAM p;
  ASSERT_EQ(dat_lmr_query(lmr, DAT_LMR_FIELD_ALL, &p), DAT_SUCCESS);
  EXPECT_EQ(p.mem_type, DAT_MEM_TYPE_SHARED_VIRTUAL);
  EXPECT_EQ(p.region_desc.for_shared_memory.virtual_address, buf.data());
  EXPECT_EQ(p.length, buf.size());
  EXPECT_EQ(p.lmr_context, lctx);
}

TEST_F(api, LmrSyncBounds) {
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_pz_create(ia0_, &pz), DAT_SUCCESS);
  Mem a, b;
  ASSERT_EQ(reg(ia0_, pz, 4096, DAT_MEM_PRIV_ALL_FLAG, &a), DAT_SUCCESS);
  ASSERT_EQ(reg(ia0_, pz, 1000, DAT_MEM_PRIV_ALL_FLAG, &b), DAT_SUCCESS);
  DAT_LMR_TRIPLET ok[2] = {a.iov(0, 4096), b.iov(10, 990)};
  EXPECT_EQ(dat_lmr_sync_rdma_read(ia0_, ok, 2), DAT_SUCCESS);
  EXPECT_EQ(dat_lmr_sync_rdma_write(ia0_, ok, 2), DAT_SUCCESS);
  DAT_LMR_TRIPLET past = a.iov(1, 4096);  // one byte past the end
  EXPECT_EQ(type_of(dat_lmr_sync_rdma_read(ia0_, &past, 1)), DAT_INVALID_PARAMETER);
  EXPECT_EQ(type_of(dat_lmr_sync_rdma_write(ia0_, &past, 1)), DAT_INVALID_PARAMETER);
  DAT_LMR_TRIPLET past2 = b.iov(0, 1001);
  EXPECT_EQ(type_of(dat_lmr_sync_rdma_read(ia0_, &past2, 1)), DAT_INVALID_PARAMETER);
  DAT_LMR_TRIPLET badctx = a.iov(0, 16);
  badctx.lmr_context = a.lctx ^ 0x5A5A5A00u;
  EXPECT_EQ(type_of(dat_lmr_sync_rdma_read(ia0_, &badctx, 1)), DAT_INVALID_PARAMETER);
  EXPECT_EQ(type_of(dat_lmr_sync_rdma_write(ia0_, &badctx, 1)), DAT_INVALID_PARAMETER);
  EXPECT_EQ(type_of(dat_lmr_sync_rdma_read(pz, ok, 1)), DAT_INVALID_HANDLE);
}

// ===================================================================== 4. EVD

TEST_F(api, EvdQueryResizeEnableUnwaitable) {
  DAT_EVD_HANDLE e = evd(ia0_, DAT_EVD_SOFTWARE_FLAG, 8);
  DAT_EVD_PARAM p;
  ASSERT_EQ(dat_evd_query(e, DAT_EVD_FIELD_ALL, &p), DAT_SUCCESS);
  EXPECT_EQ(p.ia_handle, ia0_);
  EXPECT_GE(p.evd_qlen, 8);
  EXPECT_TRUE(p.evd_state & DAT_EVD_STATE_ENABLED);
  EXPECT_TRUE(p.evd_state & DAT_EVD_STATE_WAITABLE);
  EXPECT_EQ(p.cno_handle, DAT_HANDLE_NULL);
  EXPECT_EQ(p.evd_flags, DAT_EVD_SOFTWARE_FLAG);

  ASSERT_EQ(dat_evd_resize(e, 32), DAT_SUCCESS);
  ASSERT_EQ(dat_evd_query(e, DAT_EVD_FIELD_EVD_QLEN, &p), DAT_SUCCESS);
  EXPECT_GE(p.evd_qlen, 32);

  ASSERT_EQ(dat_evd_disable(e), DAT_SUCCESS);
  ASSERT_EQ(dat_evd_query(e, DAT_EVD_FIELD_EVD_STATE, &p), DAT_SUCCESS);
  EXPECT_TRUE(p.evd_state & DAT_EVD_STATE_DISABLED);
  EXPECT_FALSE(p.evd_state & DAT_EVD_STATE_ENABLED);
  ASSERT_EQ(dat_evd_enable(e), DAT_SUCCESS);
  ASSERT_EQ(dat_evd_query(e, DAT_EVD_FIELD_EVD_STATE, &p), DAT_SUCCESS);
  EXPECT_TRUE(p.evd_state & DAT_EVD_STATE_ENABLED);

  ASSERT_EQ(dat_evd_set_unwaitable(e), DAT_SUCCESS);
  ASSERT_EQ(dat_evd_query(e, DAT_EVD_FIELD_EVD_STATE, &p), DAT_SUCCESS);
  EXPECT_TRUE(p.evd_state & DAT_EVD_STATE_UNWAITABLE);
  DAT_EVENT ev;
  DAT_COUNT nmore = 0;
  EXPECT_EQ(type_of(dat_evd_wait(e, 1000, 1, &ev, &nmore)), DAT_INVALID_STATE);
  ASSERT_EQ(dat_evd_clear_unwaitable(e), DAT_SUCCESS);
  ASSERT_EQ(dat_evd_query(e, DAT_EVD_FIELD_EVD_STATE, &p), DAT_SUCCESS);
  EXPECT_TRUE(p.evd_state & DAT_EVD_STATE_WAITABLE);
  EXPECT_EQ(type_of(dat_evd_wait(e, 1000, 1, &ev, &nmore)), DAT_TIMEOUT_EXPIRED);
}

TEST_F(api, EvdDequeueEmptyAndWaitTimeout) {
  DAT_EVD_HANDLE e = evd(ia0_, DAT_EVD_SOFTWARE_FLAG, 8);
  DAT_EVENT ev;
  EXPECT_EQ(dat_evd_dequeue(e, &ev), DAT_QUEUE_EMPTY);  // exactly, no class bit
  DAT_COUNT nmore = -1;
  const auto t0 = std::chrono::steady_clock::now();
  const DAT_RETURN r = dat_evd_wait(e, 10000, 1, &ev, &nmore);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(type_of(r), DAT_TIMEOUT_EXPIRED);
  EXPECT_GE(took, std::chrono::milliseconds(10));
  EXPECT_LT(took, std::chrono::seconds(2));
}

TEST_F(api, EvdPostSeDequeue) {
  DAT_EVD_HANDLE e = evd(ia0_, DAT_EVD_SOFTWARE_FLAG, 8);
  int anchor = 0;
  DAT_EVENT in{};
  in.event_number = DAT_SOFTWARE_EVENT;
  in.event_data.software_event_data.pointer = &anchor;
  ASSERT_EQ(dat_evd_post_se(e, &in), DAT_SUCCESS);
  DAT_EVENT out;
  std::memset(&out, 0, sizeof(out));
  ASSERT_EQ(dat_evd_dequeue(e, &out), DAT_SUCCESS);
  EXPECT_EQ(out.event_number, DAT_SOFTWARE_EVENT);
  EXPECT_EQ(out.evd_handle, e);
  EXPECT_EQ(out.event_data.software_event_data.pointer, &anchor);
  EXPECT_EQ(dat_evd_dequeue(e, &out), DAT_QUEUE_EMPTY);
  // And through dat_evd_wait.
  ASSERT_EQ(dat_evd_post_se(e, &in), DAT_SUCCESS);
  ASSERT_EQ(wait(e, &out, 1'000'000), DAT_SUCCESS);
  EXPECT_EQ(out.event_data.software_event_data.pointer, &anchor);
}

TEST_F(api, EvdPostSeIntoFullEvd) {
  DAT_EVD_HANDLE e = evd(ia0_, DAT_EVD_SOFTWARE_FLAG, 2);
  DAT_EVD_PARAM p;
  ASSERT_EQ(dat_evd_query(e, DAT_EVD_FIELD_EVD_QLEN, &p), DAT_SUCCESS);
  DAT_EVENT in{};
  in.event_number = DAT_SOFTWARE_EVENT;
  for (DAT_COUNT i = 0; i < p.evd_qlen; ++i) {
    in.event_data.software_event_data.pointer =
        reinterpret_cast<void*>(static_cast<uintptr_t>(0x100 + i));
    ASSERT_EQ(dat_evd_post_se(e, &in), DAT_SUCCESS) << i;
  }
  EXPECT_EQ(type_of(dat_evd_post_se(e, &in)), DAT_QUEUE_FULL);
  DAT_EVENT out;
  for (DAT_COUNT i = 0; i < p.evd_qlen; ++i) {
    ASSERT_EQ(dat_evd_dequeue(e, &out), DAT_SUCCESS);
    EXPECT_EQ(out.event_data.software_event_data.pointer,
              reinterpret_cast<void*>(static_cast<uintptr_t>(0x100 + i)));
  }
  EXPECT_EQ(dat_evd_dequeue(e, &out), DAT_QUEUE_EMPTY);
}

TEST_F(api, EvdFreeWhileEpUsesIt) {
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_pz_create(ia0_, &pz), DAT_SUCCESS);
  DAT_EVD_HANDLE dto = evd(ia0_, DAT_EVD_DTO_FLAG);
  DAT_EVD_HANDLE conn = evd(ia0_, DAT_EVD_CONNECTION_FLAG);
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_ep_create(ia0_, pz, dto, dto, conn, nullptr, &ep), DAT_SUCCESS);
  EXPECT_EQ(type_of(dat_evd_free(dto)), DAT_INVALID_STATE);
  EXPECT_EQ(type_of(dat_evd_free(conn)), DAT_INVALID_STATE);
  EXPECT_EQ(type_of(dat_pz_free(pz)), DAT_INVALID_STATE);
  ASSERT_EQ(dat_ep_free(ep), DAT_SUCCESS);
  EXPECT_EQ(dat_evd_free(dto), DAT_SUCCESS);
  EXPECT_EQ(dat_evd_free(conn), DAT_SUCCESS);
  EXPECT_EQ(dat_pz_free(pz), DAT_SUCCESS);
}

TEST_F(api, EvdWaitThresholdAboveQlen) {
  DAT_EVD_HANDLE e = evd(ia0_, DAT_EVD_SOFTWARE_FLAG, 4);
  DAT_EVD_PARAM p;
  ASSERT_EQ(dat_evd_query(e, DAT_EVD_FIELD_EVD_QLEN, &p), DAT_SUCCESS);
  DAT_EVENT ev;
  DAT_COUNT nmore = 0;
  EXPECT_EQ(type_of(dat_evd_wait(e, 1000, p.evd_qlen + 1, &ev, &nmore)), DAT_INVALID_PARAMETER);
}

// ===================================================================== 5. CNO

TEST_F(api, CnoWaitFreeTimeout) {
  DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_cno_create(ia0_, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno), DAT_SUCCESS);
  DAT_EVD_HANDLE e = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_evd_create(ia0_, 8, cno, DAT_EVD_SOFTWARE_FLAG, &e), DAT_SUCCESS);
  DAT_EVD_PARAM p;
  ASSERT_EQ(dat_evd_query(e, DAT_EVD_FIELD_CNO, &p), DAT_SUCCESS);
  EXPECT_EQ(p.cno_handle, cno);
  DAT_CNO_PARAM cp;
  ASSERT_EQ(dat_cno_query(cno, DAT_CNO_FIELD_ALL, &cp), DAT_SUCCESS);
  EXPECT_EQ(cp.ia_handle, ia0_);

  int anchor = 0;
  DAT_EVENT in{};
  in.event_number = DAT_SOFTWARE_EVENT;
  in.event_data.software_event_data.pointer = &anchor;
  ASSERT_EQ(dat_evd_post_se(e, &in), DAT_SUCCESS);
  DAT_EVD_HANDLE got = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_cno_wait(cno, 1'000'000, &got), DAT_SUCCESS);
  EXPECT_EQ(got, e);
  DAT_EVENT out;
  ASSERT_EQ(dat_evd_dequeue(e, &out), DAT_SUCCESS);
  EXPECT_EQ(out.event_data.software_event_data.pointer, &anchor);

  EXPECT_EQ(type_of(dat_cno_free(cno)), DAT_INVALID_STATE);

  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(type_of(dat_cno_wait(cno, 10000, &got)), DAT_TIMEOUT_EXPIRED);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(10));

  ASSERT_EQ(dat_evd_free(e), DAT_SUCCESS);
  EXPECT_EQ(dat_cno_free(cno), DAT_SUCCESS);
}

// A CNO agent (DAT_OS_WAIT_PROXY_AGENT) is the consumer's upcall for an
// event on an EVD of the CNO; the natural thing for it to do is take the
// event off that EVD.  It must therefore run where a call into DAT can take
// the interface lock: not while the delivering thread still holds it.
struct AgentProbe {
  std::mutex mu;
  int calls = 0;
  std::vector<DAT_RETURN> results;    // of the agent's dat_evd_dequeue, in call order
  std::vector<DAT_EVD_HANDLE> evds;   // the EVD each call named
  std::vector<const void*> pointers;  // software events taken
  std::vector<uint64_t> cookies;      // DTO completions taken
  std::vector<DAT_DTO_COMPLETION_STATUS> statuses;
  int count() {
    std::lock_guard<std::mutex> g(mu);
    return calls;
  }
};

void dequeueing_agent(DAT_PVOID instance, DAT_EVD_HANDLE evd) {
  auto* p = static_cast<AgentProbe*>(instance);
  DAT_EVENT ev;
  std::memset(&ev, 0, sizeof(ev));
  const DAT_RETURN r = dat_evd_dequeue(evd, &ev);
  std::lock_guard<std::mutex> g(p->mu);
  p->results.push_back(r);
  p->evds.push_back(evd);
  if (r == DAT_SUCCESS && ev.event_number == DAT_SOFTWARE_EVENT)
    p->pointers.push_back(ev.event_data.software_event_data.pointer);
  if (r == DAT_SUCCESS && ev.event_number == DAT_DTO_COMPLETION_EVENT) {
    p->cookies.push_back(ev.event_data.dto_completion_event_data.user_cookie.as_64);
    p->statuses.push_back(ev.event_data.dto_completion_event_data.status);
  }
  ++p->calls;
}

// Waits (sleeping, bounded) until the agent has run n times.  A deadlocked
// delivering thread holds an interface lock for good, so neither the test
// nor its tear-down could go on: the process ends, failed, instead.
void await_agent_or_die(AgentProbe* p, int n, const char* what) {
  for (int i = 0; i < 10'000 && p->count() < n; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (p->count() < n) {
    std::fprintf(stderr, "%s: the CNO agent ran %d of %d times in 10 s (deadlocked?)\n", what,
                 p->count(), n);
    std::fflush(stderr);
    std::_Exit(1);
  }
}

TEST_F(api, CnoAgentMayDequeueFromItsEvd) {
  AgentProbe probe;
  DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_cno_create(ia0_, DAT_OS_WAIT_PROXY_AGENT{&probe, dequeueing_agent}, &cno),
            DAT_SUCCESS);
  DAT_EVD_HANDLE e = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_evd_create(ia0_, 8, cno, DAT_EVD_SOFTWARE_FLAG, &e), DAT_SUCCESS);
  int anchor[2] = {};
  DAT_EVENT in{};
  in.event_number = DAT_SOFTWARE_EVENT;
  // Posted from another thread: if that one deadlocks, this one reports it.
  std::atomic<DAT_RETURN> posted{DAT_INTERNAL_ERROR};
  std::thread poster([&] {
    DAT_RETURN r = DAT_SUCCESS;
    for (int& a : anchor) {
      in.event_data.software_event_data.pointer = &a;
      if (r == DAT_SUCCESS) r = dat_evd_post_se(e, &in);
    }
    posted = r;
  });
  await_agent_or_die(&probe, 2, "dat_evd_post_se");
  poster.join();
  EXPECT_EQ(posted.load(), DAT_SUCCESS);
  {
    std::lock_guard<std::mutex> g(probe.mu);
    EXPECT_EQ(probe.calls, 2);
    EXPECT_EQ(probe.results, (std::vector<DAT_RETURN>{DAT_SUCCESS, DAT_SUCCESS}));
    EXPECT_EQ(probe.evds, (std::vector<DAT_EVD_HANDLE>{e, e}));
    EXPECT_EQ(probe.pointers, (std::vector<const void*>{&anchor[0], &anchor[1]}));
  }
  DAT_EVENT out;
  EXPECT_EQ(dat_evd_dequeue(e, &out), DAT_QUEUE_EMPTY);  // the agent took both
  ASSERT_EQ(dat_evd_free(e), DAT_SUCCESS);
  ASSERT_EQ(dat_cno_free(cno), DAT_SUCCESS);
}

// dat_cno_free returns only once an upcall of its agent that had begun has
// returned: the consumer may free the agent's instance right after (the
// verbs library frees its context after closing the IA whose CNO it was).
struct SlowAgent {
  std::atomic<bool> started{false}, done{false};
};
void slow_agent(DAT_PVOID instance, DAT_EVD_HANDLE) {
  auto* a = static_cast<SlowAgent*>(instance);
  a->started = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  a->done = true;
}

TEST_F(api, CnoFreeWaitsForAnUpcallInProgress) {
  SlowAgent agent;
  DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_cno_create(ia0_, DAT_OS_WAIT_PROXY_AGENT{&agent, slow_agent}, &cno), DAT_SUCCESS);
  DAT_EVD_HANDLE e = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_evd_create(ia0_, 8, cno, DAT_EVD_SOFTWARE_FLAG, &e), DAT_SUCCESS);
  DAT_EVENT in{};
  in.event_number = DAT_SOFTWARE_EVENT;
  std::atomic<DAT_RETURN> posted{DAT_INTERNAL_ERROR};
  std::thread poster([&] { posted = dat_evd_post_se(e, &in); });  // the upcall runs here
  for (int i = 0; i < 10'000 && !agent.started; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(agent.started.load());
  ASSERT_EQ(dat_evd_free(e), DAT_SUCCESS);
  ASSERT_EQ(dat_cno_free(cno), DAT_SUCCESS);
  EXPECT_TRUE(agent.done.load()) << "dat_cno_free returned while its agent ran";
  poster.join();
  EXPECT_EQ(posted.load(), DAT_SUCCESS);
}

// The same for completions the library delivers on its own (the background
// progress thread, or another consumer call driving the interface): each
// upcall comes after the interface lock is released, one per completion, in
// completion order.
TEST_F(api, CnoAgentOfRecvEvdDequeuesCompletions) {
  Side cli, srv;
  ASSERT_NO_FATAL_FAILURE(establish(&cli, &srv));
  AgentProbe probe;
  DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_cno_create(ia1_, DAT_OS_WAIT_PROXY_AGENT{&probe, dequeueing_agent}, &cno),
            DAT_SUCCESS);
  ASSERT_EQ(dat_evd_modify_cno(srv.recv_evd, cno), DAT_SUCCESS);
  Mem rm, sm;
  ASSERT_EQ(reg(ia1_, srv.pz, 3 * 64, DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &rm), DAT_SUCCESS);
  ASSERT_EQ(reg(ia0_, cli.pz, 64, DAT_MEM_PRIV_LOCAL_READ_FLAG, &sm), DAT_SUCCESS);
  for (uint64_t i = 0; i < 3; ++i) {
    DAT_LMR_TRIPLET t = rm.iov(i * 64, 64);
    ASSERT_EQ(dat_ep_post_recv(srv.ep, 1, &t, cookie(10 + i), DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
  }
  for (uint64_t i = 0; i < 3; ++i) {
    DAT_LMR_TRIPLET t = sm.iov(0, 64);
    ASSERT_EQ(dat_ep_post_send(cli.ep, 1, &t, cookie(20 + i), DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
  }
  await_agent_or_die(&probe, 3, "receive completions");
  {
    std::lock_guard<std::mutex> g(probe.mu);
    EXPECT_EQ(probe.results, (std::vector<DAT_RETURN>(3, DAT_SUCCESS)));
    EXPECT_EQ(probe.evds, (std::vector<DAT_EVD_HANDLE>(3, srv.recv_evd)));
    EXPECT_EQ(probe.cookies, (std::vector<uint64_t>{10, 11, 12}));
    EXPECT_EQ(probe.statuses, (std::vector<DAT_DTO_COMPLETION_STATUS>(3, DAT_DTO_SUCCESS)));
  }
  for (uint64_t i = 0; i < 3; ++i)
    ASSERT_NO_FATAL_FAILURE(expect_dto(cli.req_evd, 20 + i, DAT_DTO_SUCCESS, 64));
  ASSERT_EQ(dat_evd_modify_cno(srv.recv_evd, DAT_HANDLE_NULL), DAT_SUCCESS);
  ASSERT_EQ(dat_cno_free(cno), DAT_SUCCESS);
}

// ============================================================== 6. connection

TEST_F(api, ConnectWithPrivateData) {
  Side cli, srv;
  ASSERT_NO_FATAL_FAILURE(make_side(ia0_, &cli));
  ASSERT_NO_FATAL_FAILURE(make_side(ia1_, &srv));
  DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_psp_create(ia1_, kQual, srv.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), DAT_SUCCESS);
  DAT_PSP_PARAM pp;
  ASSERT_EQ(dat_psp_query(psp, DAT_PSP_FIELD_ALL, &pp), DAT_SUCCESS);
  EXPECT_EQ(pp.conn_qual, kQual);
  EXPECT_EQ(pp.evd_handle, srv.cr_evd);

  uint8_t req_pd[40];
  for (int i = 0; i < 40; ++i) req_pd[i] = static_cast<uint8_t>(0xC0 ^ i);
  ASSERT_EQ(connect_to(cli, "192.168.77.2", kQual, kWaitUs, 40, req_pd), DAT_SUCCESS);

  DAT_EVENT crev;
  DAT_CR_HANDLE cr = wait_cr(srv, &crev);
  ASSERT_NE(cr, DAT_HANDLE_NULL);
  EXPECT_EQ(crev.evd_handle, srv.cr_evd);
  EXPECT_EQ(crev.event_data.cr_arrival_event_data.conn_qual, kQual);
  EXPECT_EQ(crev.event_data.cr_arrival_event_data.sp_handle.psp_handle, psp);
  EXPECT_EQ(ip_of(crev.event_data.cr_arrival_event_data.local_ia_address_ptr), "192.168.77.2");

  DAT_CR_PARAM crp;
  ASSERT_EQ(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp), DAT_SUCCESS);
  EXPECT_EQ(ip_of(crp.remote_ia_address_ptr), "192.168.77.1");
  ASSERT_EQ(crp.private_data_size, 40);
  ASSERT_NE(crp.private_data, nullptr);
  EXPECT_EQ(std::memcmp(crp.private_data, req_pd, 40), 0);
  static_cast<uint8_t*>(crp.private_data)[0] ^= 0xFF;  // the buffer is writable
  static_cast<uint8_t*>(crp.private_data)[39] = 0;
  EXPECT_EQ(crp.local_ep_handle, DAT_HANDLE_NULL);

  uint8_t rep_pd[60];
  for (int i = 0; i < 60; ++i) rep_pd[i] = static_cast<uint8_t>(i == 7 ? 0 : 0x30 + i);
  ASSERT_EQ(dat_cr_accept(cr, srv.ep, 60, rep_pd), DAT_SUCCESS);

  DAT_EVENT ev;
  ASSERT_NO_FATAL_FAILURE(expect_conn_event(cli, DAT_CONNECTION_EVENT_ESTABLISHED, &ev));
  ASSERT_EQ(ev.event_data.connect_event_data.private_data_size, 60);
  ASSERT_NE(ev.event_data.connect_event_data.private_data, nullptr);
  EXPECT_EQ(std::memcmp(ev.event_data.connect_event_data.private_data, rep_pd, 60), 0);
  ASSERT_NO_FATAL_FAILURE(expect_conn_event(srv, DAT_CONNECTION_EVENT_ESTABLISHED));
  // An accepted connection request is consumed: its handle is gone.
  DAT_HANDLE_TYPE ht;
  EXPECT_EQ(type_of(dat_get_handle_type(cr, &ht)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp)), DAT_INVALID_HANDLE);

  EXPECT_EQ(ep_state(cli.ep), DAT_EP_STATE_CONNECTED);
  EXPECT_EQ(ep_state(srv.ep), DAT_EP_STATE_CONNECTED);
  DAT_EP_PARAM epp;
  ASSERT_EQ(dat_ep_query(cli.ep, DAT_EP_FIELD_ALL, &epp), DAT_SUCCESS);
  EXPECT_EQ(epp.ep_state, DAT_EP_STATE_CONNECTED);
  EXPECT_EQ(epp.ia_handle, ia0_);
  EXPECT_EQ(epp.pz_handle, cli.pz);
  EXPECT_EQ(epp.connect_evd_handle, cli.conn_evd);
  EXPECT_EQ(ip_of(epp.remote_ia_address_ptr), "192.168.77.2");
  ASSERT_EQ(dat_ep_query(srv.ep, DAT_EP_FIELD_EP_STATE, &epp), DAT_SUCCESS);
  EXPECT_EQ(epp.ep_state, DAT_EP_STATE_CONNECTED);
}

// ==================================================================== 7. DTOs

TEST_F(api, SendRecvSizes) {
  Side cli, srv;
  ASSERT_NO_FATAL_FAILURE(establish(&cli, &srv));
  constexpr size_t kMiB = 1 << 20;
  Mem src, dst;
  ASSERT_EQ(reg(ia0_, cli.pz, kMiB, DAT_MEM_PRIV_ALL_FLAG, &src), DAT_SUCCESS);
  ASSERT_EQ(reg(ia1_, srv.pz, kMiB, DAT_MEM_PRIV_ALL_FLAG, &dst), DAT_SUCCESS);
  uint64_t ck = 100;
  for (size_t len : {size_t{0}, size_t{1}, size_t{4096}, kMiB}) {
    SCOPED_TRACE("length " + std::to_string(len));
    fill(src.buf, static_cast<uint32_t>(len));
    std::fill(dst.buf.begin(), dst.buf.end(), 0xEE);
    DAT_LMR_TRIPLET r = dst.iov(0, kMiB);
    ASSERT_EQ(dat_ep_post_recv(srv.ep, 1, &r, cookie(ck + 1), DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
    DAT_LMR_TRIPLET s[3];
    DAT_COUNT ns = 1;
    if (len == kMiB) {  // three segments: 300000 + 400000 + rest
      s[0] = src.iov(0, 300000);
      s[1] = src.iov(300000, 400000);
      s[2] = src.iov(700000, kMiB - 700000);
      ns = 3;
    } else {
      s[0] = src.iov(0, len);
      ns = len == 0 ? 0 : 1;
    }
    ASSERT_EQ(dat_ep_post_send(cli.ep, ns, s, cookie(ck), DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(expect_dto(cli.req_evd, ck, DAT_DTO_SUCCESS, len));
    ASSERT_NO_FATAL_FAILURE(expect_dto(srv.recv_evd, ck + 1, DAT_DTO_SUCCESS, len));
    EXPECT_EQ(std::memcmp(dst.buf.data(), src.buf.data(), len), 0);
    if (len < kMiB) {
      EXPECT_EQ(dst.buf[len], 0xEE) << "wrote past the message";
    }
    ck += 10;
  }
}

TEST_F(api, RdmaWriteAndRead64K) {
  Side cli, srv;
  ASSERT_NO_FATAL_FAILURE(establish(&cli, &srv));
  constexpr size_t k64 = 64 * 1024;
  Mem local, remote;
  ASSERT_EQ(reg(ia0_, cli.pz, k64, DAT_MEM_PRIV_ALL_FLAG, &local), DAT_SUCCESS);
  ASSERT_EQ(reg(ia1_, srv.pz, k64, DAT_MEM_PRIV_ALL_FLAG, &remote), DAT_SUCCESS);
  ASSERT_NE(remote.rctx, 0u);

  fill(local.buf, 1);
  DAT_LMR_TRIPLET l = local.iov(0, k64);
  DAT_RMR_TRIPLET r{};
  r.rmr_context = remote.rctx;
  r.target_address = remote.va();
  r.segment_length = k64;
  ASSERT_EQ(dat_ep_post_rdma_write(cli.ep, 1, &l, cookie(7), &r, DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_dto(cli.req_evd, 7, DAT_DTO_SUCCESS, k64));
  DAT_LMR_TRIPLET rs = remote.iov(0, k64);
  EXPECT_EQ(dat_lmr_sync_rdma_write(ia1_, &rs, 1), DAT_SUCCESS);
  EXPECT_EQ(remote.buf, local.buf);

  fill(remote.buf, 2);
  EXPECT_EQ(dat_lmr_sync_rdma_read(ia1_, &rs, 1), DAT_SUCCESS);
  std::fill(local.buf.begin(), local.buf.end(), 0);
  ASSERT_EQ(dat_ep_post_rdma_read(cli.ep, 1, &l, cookie(8), &r, DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_dto(cli.req_evd, 8, DAT_DTO_SUCCESS, k64));
  EXPECT_EQ(local.buf, remote.buf);
  DAT_EVENT ev;
  EXPECT_EQ(dat_evd_dequeue(srv.recv_evd, &ev), DAT_QUEUE_EMPTY);  // RDMA consumes no receive
}

TEST_F(api, SuppressFlagGivesNoEventOnSuccess) {
  Side cli, srv;
  ASSERT_NO_FATAL_FAILURE(establish(&cli, &srv));
  Mem src, dst;
  ASSERT_EQ(reg(ia0_, cli.pz, 256, DAT_MEM_PRIV_ALL_FLAG, &src), DAT_SUCCESS);
  ASSERT_EQ(reg(ia1_, srv.pz, 512, DAT_MEM_PRIV_ALL_FLAG, &dst), DAT_SUCCESS);
  fill(src.buf, 3);
  DAT_LMR_TRIPLET r1 = dst.iov(0, 256), r2 = dst.iov(256, 256);
  ASSERT_EQ(dat_ep_post_recv(srv.ep, 1, &r1, cookie(21), DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  ASSERT_EQ(dat_ep_post_recv(srv.ep, 1, &r2, cookie(22), DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  DAT_LMR_TRIPLET s = src.iov(0, 256);
  ASSERT_EQ(dat_ep_post_send(cli.ep, 1, &s, cookie(11), DAT_COMPLETION_SUPPRESS_FLAG), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_dto(srv.recv_evd, 21, DAT_DTO_SUCCESS, 256));
  ASSERT_EQ(dat_ep_post_send(cli.ep, 1, &s, cookie(12), DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_dto(srv.recv_evd, 22, DAT_DTO_SUCCESS, 256));
  // The first event on the request EVD is the second send's.
  ASSERT_NO_FATAL_FAILURE(expect_dto(cli.req_evd, 12, DAT_DTO_SUCCESS, 256));
  DAT_EVENT ev;
  EXPECT_EQ(dat_evd_dequeue(cli.req_evd, &ev), DAT_QUEUE_EMPTY);
}

TEST_F(api, RdmaWriteToBadRmrContextBreaksConnection) {
  Side cli, srv;
  ASSERT_NO_FATAL_FAILURE(establish(&cli, &srv));
  Mem local, remote;
  ASSERT_EQ(reg(ia0_, cli.pz, 4096, DAT_MEM_PRIV_ALL_FLAG, &local), DAT_SUCCESS);
  ASSERT_EQ(reg(ia1_, srv.pz, 4096, DAT_MEM_PRIV_ALL_FLAG, &remote), DAT_SUCCESS);
  DAT_LMR_TRIPLET l = local.iov(0, 4096);
  DAT_RMR_TRIPLET r{};
  r.rmr_context = remote.rctx ^ 0x7F5A0000u;
  r.target_address = remote.va();
  r.segment_length = 4096;
  ASSERT_EQ(dat_ep_post_rdma_write(cli.ep, 1, &l, cookie(31), &r, DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_dto(cli.req_evd, 31, DAT_DTO_ERR_REMOTE_ACCESS, 0, false));
  // A fatal remote error takes the EP out of CONNECTED; the spec's event for
  // that is DAT_CONNECTION_EVENT_BROKEN on the connect EVD.
  ASSERT_NO_FATAL_FAILURE(expect_conn_event(cli, DAT_CONNECTION_EVENT_BROKEN));
  EXPECT_EQ(ep_state(cli.ep), DAT_EP_STATE_DISCONNECTED);
  // Posting on the broken EP is refused.
  EXPECT_EQ(
      type_of(dat_ep_post_rdma_write(cli.ep, 1, &l, cookie(32), &r, DAT_COMPLETION_DEFAULT_FLAG)),
      DAT_INVALID_STATE);
}

TEST_F(api, RmrBindRemoteWriteRebind) {
  Side cli, srv;
  ASSERT_NO_FATAL_FAILURE(establish(&cli, &srv));
  Mem target, src;
  ASSERT_EQ(reg(ia1_, srv.pz, 4 * 4096, DAT_MEM_PRIV_ALL_FLAG, &target), DAT_SUCCESS);
  ASSERT_EQ(reg(ia0_, cli.pz, 4096, DAT_MEM_PRIV_ALL_FLAG, &src), DAT_SUCCESS);
  DAT_RMR_HANDLE rmr = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_rmr_create(srv.pz, &rmr), DAT_SUCCESS);

  DAT_LMR_TRIPLET range = target.iov(4096, 4096);
  DAT_RMR_COOKIE rck;
  rck.as_64 = 0xB1D0001;
  DAT_RMR_CONTEXT ctx1 = 0;
  ASSERT_EQ(dat_rmr_bind(rmr, &range, DAT_MEM_PRIV_REMOTE_WRITE_FLAG, srv.ep, rck,
                         DAT_COMPLETION_DEFAULT_FLAG, &ctx1),
            DAT_SUCCESS);
  EXPECT_NE(ctx1, 0u);
  DAT_EVENT ev;
  ASSERT_EQ(wait(srv.req_evd, &ev), DAT_SUCCESS);
  ASSERT_EQ(ev.event_number, DAT_RMR_BIND_COMPLETION_EVENT);
  EXPECT_EQ(ev.event_data.rmr_completion_event_data.rmr_handle, rmr);
  EXPECT_EQ(ev.event_data.rmr_completion_event_data.user_cookie.as_64, 0xB1D0001u);
  EXPECT_EQ(ev.event_data.rmr_completion_event_data.status, DAT_RMR_BIND_SUCCESS);
  DAT_RMR_PARAM rp;
  ASSERT_EQ(dat_rmr_query(rmr, DAT_RMR_FIELD_ALL, &rp), DAT_SUCCESS);
  EXPECT_EQ(rp.rmr_context, ctx1);
  EXPECT_EQ(rp.pz_handle, srv.pz);
  EXPECT_EQ(rp.lmr_triplet.virtual_address, range.virtual_address);
  EXPECT_EQ(rp.lmr_triplet.segment_length, 4096u);

  DAT_LMR_TRIPLET l = src.iov(0, 4096);
  DAT_RMR_TRIPLET r{};
  r.rmr_context = ctx1;
  r.target_address = range.virtual_address;
  r.segment_length = 4096;
  fill(src.buf, 5);
  ASSERT_EQ(dat_ep_post_rdma_write(cli.ep, 1, &l, cookie(41), &r, DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_dto(cli.req_evd, 41, DAT_DTO_SUCCESS, 4096));
  EXPECT_EQ(std::memcmp(target.buf.data() + 4096, src.buf.data(), 4096), 0);
  EXPECT_EQ(target.buf[4095], 0);  // nothing outside the bound range
  EXPECT_EQ(target.buf[8192], 0);

  // Re-bind: a new context; the old one stops working.
  rck.as_64 = 0xB1D0002;
  DAT_RMR_CONTEXT ctx2 = 0;
  ASSERT_EQ(dat_rmr_bind(rmr, &range, DAT_MEM_PRIV_REMOTE_WRITE_FLAG, srv.ep, rck,
                         DAT_COMPLETION_DEFAULT_FLAG, &ctx2),
            DAT_SUCCESS);
  EXPECT_NE(ctx2, ctx1);
  ASSERT_EQ(wait(srv.req_evd, &ev), DAT_SUCCESS);
  ASSERT_EQ(ev.event_number, DAT_RMR_BIND_COMPLETION_EVENT);
  EXPECT_EQ(ev.event_data.rmr_completion_event_data.user_cookie.as_64, 0xB1D0002u);
  r.rmr_context = ctx2;
  fill(src.buf, 6);
  ASSERT_EQ(dat_ep_post_rdma_write(cli.ep, 1, &l, cookie(42), &r, DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_dto(cli.req_evd, 42, DAT_DTO_SUCCESS, 4096));
  EXPECT_EQ(std::memcmp(target.buf.data() + 4096, src.buf.data(), 4096), 0);
  r.rmr_context = ctx1;
  ASSERT_EQ(dat_ep_post_rdma_write(cli.ep, 1, &l, cookie(43), &r, DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_dto(cli.req_evd, 43, DAT_DTO_ERR_REMOTE_ACCESS, 0, false));
}

// ============================================ 8. rejects, disconnect, RSP, quals

TEST_F(api, RejectedByPeer) {
  Side cli, srv;
  ASSERT_NO_FATAL_FAILURE(make_side(ia0_, &cli));
  ASSERT_NO_FATAL_FAILURE(make_side(ia1_, &srv));
  DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_psp_create(ia1_, kQual, srv.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), DAT_SUCCESS);
  ASSERT_EQ(connect_to(cli, "192.168.77.2", kQual), DAT_SUCCESS);
  DAT_CR_HANDLE cr = wait_cr(srv);
  ASSERT_NE(cr, DAT_HANDLE_NULL);
  ASSERT_EQ(dat_cr_reject(cr), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_conn_event(cli, DAT_CONNECTION_EVENT_PEER_REJECTED));
  EXPECT_EQ(type_of(dat_cr_reject(cr)), DAT_INVALID_HANDLE);  // consumed by the first reject
  EXPECT_NE(ep_state(cli.ep), DAT_EP_STATE_CONNECTED);
}

TEST_F(api, NoListenerIsNonPeerRejected) {
  Side cli;
  ASSERT_NO_FATAL_FAILURE(make_side(ia0_, &cli));
  ASSERT_EQ(connect_to(cli, "192.168.77.2", 4321), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_conn_event(cli, DAT_CONNECTION_EVENT_NON_PEER_REJECTED));
}

TEST_F(api, UnknownAddressUnreachableOrTimedOut) {
  Side cli;
  ASSERT_NO_FATAL_FAILURE(make_side(ia0_, &cli));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(connect_to(cli, "192.168.77.9", kQual, 300000), DAT_SUCCESS);
  DAT_EVENT ev;
  ASSERT_EQ(wait(cli.conn_evd, &ev, 3'000'000), DAT_SUCCESS);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_TRUE(ev.event_number == DAT_CONNECTION_EVENT_UNREACHABLE ||
              ev.event_number == DAT_CONNECTION_EVENT_TIMED_OUT)
      << std::hex << "got 0x" << ev.event_number;
  EXPECT_LT(took, std::chrono::milliseconds(2000));
  EXPECT_NE(ep_state(cli.ep), DAT_EP_STATE_CONNECTED);
}

TEST_F(api, GracefulDisconnectResetReconnect) {
  Side cli, srv;
  ASSERT_NO_FATAL_FAILURE(establish(&cli, &srv));
  ASSERT_EQ(dat_ep_disconnect(cli.ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_conn_event(cli, DAT_CONNECTION_EVENT_DISCONNECTED));
  ASSERT_NO_FATAL_FAILURE(expect_conn_event(srv, DAT_CONNECTION_EVENT_DISCONNECTED));
  EXPECT_EQ(ep_state(cli.ep), DAT_EP_STATE_DISCONNECTED);
  EXPECT_EQ(ep_state(srv.ep), DAT_EP_STATE_DISCONNECTED);
  ASSERT_EQ(dat_ep_reset(cli.ep), DAT_SUCCESS);
  ASSERT_EQ(dat_ep_reset(srv.ep), DAT_SUCCESS);
  EXPECT_EQ(ep_state(cli.ep), DAT_EP_STATE_UNCONNECTED);
  EXPECT_EQ(ep_state(srv.ep), DAT_EP_STATE_UNCONNECTED);
  ASSERT_NO_FATAL_FAILURE(reconnect(&cli, &srv));
  EXPECT_EQ(ep_state(cli.ep), DAT_EP_STATE_CONNECTED);
  EXPECT_EQ(ep_state(srv.ep), DAT_EP_STATE_CONNECTED);
  // And the new connection carries data.
  Mem a, b;
  ASSERT_EQ(reg(ia0_, cli.pz, 64, DAT_MEM_PRIV_ALL_FLAG, &a), DAT_SUCCESS);
  ASSERT_EQ(reg(ia1_, srv.pz, 64, DAT_MEM_PRIV_ALL_FLAG, &b), DAT_SUCCESS);
  fill(a.buf, 9);
  DAT_LMR_TRIPLET rb = b.iov(0, 64), sa = a.iov(0, 64);
  ASSERT_EQ(dat_ep_post_recv(srv.ep, 1, &rb, cookie(52), DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  ASSERT_EQ(dat_ep_post_send(cli.ep, 1, &sa, cookie(51), DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_dto(srv.recv_evd, 52, DAT_DTO_SUCCESS, 64));
  EXPECT_EQ(a.buf, b.buf);
}

TEST_F(api, PspOnUsedQualifier) {
  DAT_EVD_HANDLE cr = evd(ia1_, DAT_EVD_CR_FLAG);
  DAT_PSP_HANDLE p1 = DAT_HANDLE_NULL, p2 = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_psp_create(ia1_, kQual, cr, DAT_PSP_CONSUMER_FLAG, &p1), DAT_SUCCESS);
  EXPECT_EQ(type_of(dat_psp_create(ia1_, kQual, cr, DAT_PSP_CONSUMER_FLAG, &p2)),
            DAT_CONN_QUAL_IN_USE);
  ASSERT_EQ(dat_psp_free(p1), DAT_SUCCESS);
  EXPECT_EQ(dat_psp_create(ia1_, kQual, cr, DAT_PSP_CONSUMER_FLAG, &p2), DAT_SUCCESS);
}

TEST_F(api, RspReservedEpAcceptWithNullEp) {
  Side cli, srv;
  ASSERT_NO_FATAL_FAILURE(make_side(ia0_, &cli));
  ASSERT_NO_FATAL_FAILURE(make_side(ia1_, &srv));
  DAT_RSP_HANDLE rsp = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_rsp_create(ia1_, 5678, srv.ep, srv.cr_evd, &rsp), DAT_SUCCESS);
  EXPECT_EQ(ep_state(srv.ep), DAT_EP_STATE_RESERVED);
  DAT_RSP_PARAM rp;
  ASSERT_EQ(dat_rsp_query(rsp, DAT_RSP_FIELD_ALL, &rp), DAT_SUCCESS);
  EXPECT_EQ(rp.conn_qual, 5678u);
  EXPECT_EQ(rp.ep_handle, srv.ep);
  EXPECT_EQ(rp.evd_handle, srv.cr_evd);

  ASSERT_EQ(connect_to(cli, "192.168.77.2", 5678), DAT_SUCCESS);
  DAT_EVENT crev;
  DAT_CR_HANDLE cr = wait_cr(srv, &crev);
  ASSERT_NE(cr, DAT_HANDLE_NULL);
  EXPECT_EQ(crev.event_data.cr_arrival_event_data.conn_qual, 5678u);
  DAT_CR_PARAM crp;
  ASSERT_EQ(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp), DAT_SUCCESS);
  EXPECT_EQ(crp.local_ep_handle, srv.ep);
  ASSERT_EQ(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, nullptr), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(expect_conn_event(cli, DAT_CONNECTION_EVENT_ESTABLISHED));
  ASSERT_NO_FATAL_FAILURE(expect_conn_event(srv, DAT_CONNECTION_EVENT_ESTABLISHED));
  EXPECT_EQ(ep_state(cli.ep), DAT_EP_STATE_CONNECTED);
  EXPECT_EQ(ep_state(srv.ep), DAT_EP_STATE_CONNECTED);
}

// ================================================================ 9. IA close

TEST_F(api, IaCloseGracefulWithObjectsThenAbrupt) {
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_pz_create(ia0_, &pz), DAT_SUCCESS);
  DAT_EVD_HANDLE e = evd(ia0_, DAT_EVD_SOFTWARE_FLAG);
  Mem m;
  ASSERT_EQ(reg(ia0_, pz, 4096, DAT_MEM_PRIV_ALL_FLAG, &m), DAT_SUCCESS);
  DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_cno_create(ia0_, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno), DAT_SUCCESS);
  DAT_EVD_HANDLE conn = evd(ia0_, DAT_EVD_CONNECTION_FLAG);
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_ep_create(ia0_, pz, DAT_HANDLE_NULL, DAT_HANDLE_NULL, conn, nullptr, &ep),
            DAT_SUCCESS);

  EXPECT_EQ(type_of(dat_ia_close(ia0_, DAT_CLOSE_GRACEFUL_FLAG)), DAT_INVALID_STATE);
  // Still open and usable.
  EXPECT_EQ(dat_ia_query(ia0_, nullptr, 0, nullptr, 0, nullptr), DAT_SUCCESS);
  DAT_PZ_PARAM pzp;
  EXPECT_EQ(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &pzp), DAT_SUCCESS);

  ASSERT_EQ(dat_ia_close(ia0_, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  const DAT_IA_HANDLE ia = ia0_;
  ia0_ = DAT_HANDLE_NULL;
  DAT_HANDLE_TYPE t;
  for (DAT_HANDLE h : {ia, pz, e, m.lmr, cno, conn, ep, async0_})
    EXPECT_EQ(type_of(dat_get_handle_type(h, &t)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_ia_query(ia, nullptr, 0, nullptr, 0, nullptr)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &pzp)), DAT_INVALID_HANDLE);
  DAT_EVENT ev;
  EXPECT_EQ(type_of(dat_evd_dequeue(e, &ev)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_lmr_free(m.lmr)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_cno_free(cno)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_ep_free(ep)), DAT_INVALID_HANDLE);
  EXPECT_EQ(type_of(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG)), DAT_INVALID_HANDLE);

  // A graceful close of an IA with nothing open succeeds.
  DAT_IA_HANDLE again = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
  ASSERT_EQ(open_ia("dpdat0", &again, &async), DAT_SUCCESS);
  EXPECT_EQ(dat_ia_close(again, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
}

}  // namespace
