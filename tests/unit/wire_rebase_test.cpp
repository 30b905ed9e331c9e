// wire::rebase_view: the view of a parsed frame moved onto a copy of its
// bytes (a frame the responder keeps after a hole, its receive buffer given
// back).  Every header pointer and the payload must point into the copy at
// the offsets they had in the original, and read the same values from there.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "wire/packet.hpp"

namespace dpdat::wire {
namespace {

BuildSpec spec(Opcode o, std::span<const uint8_t> payload) {
  BuildSpec s;
  s.src_mac = {0x02, 0, 0, 0, 0, 1};
  s.dst_mac = {0x02, 0, 0, 0, 0, 2};
  s.src_ip = 0x0A000001;
  s.dst_ip = 0x0A000002;
  s.opcode = o;
  s.dest_qp = 0x123456;
  s.psn = Psn(0xFFFFF0);
  s.ack_req = true;
  s.va = 0x1122334455667788ull;
  s.rkey = 0xA1B2C3D4;
  s.dma_len = 3 * 1024;
  s.swap_add = 0x0102030405060708ull;
  s.compare = 0x1112131415161718ull;
  s.imm = 0xFEEDF00D;
  s.payload = payload;
  return s;
}

// The pointer `p` into `from` (nullptr stays nullptr) at the same offset in `to`.
template <typename T>
const T* same_offset(const T* p, const uint8_t* from, const uint8_t* to) {
  if (p == nullptr) return nullptr;
  return reinterpret_cast<const T*>(to + (reinterpret_cast<const uint8_t*>(p) - from));
}

// Which extension headers the opcode must carry (so the value checks below
// cannot pass for want of a header).
struct Has {
  bool reth = false, atomic = false, imm = false;
};

void check_rebase(Opcode o, size_t payload_len, size_t copy_at, Has has) {
  SCOPED_TRACE(std::string(op_info(o).name));
  std::vector<uint8_t> pay(payload_len);
  for (size_t i = 0; i < pay.size(); ++i) pay[i] = static_cast<uint8_t>(i * 7 + 1);
  std::vector<uint8_t> orig(9000);
  const BuildResult r = build_packet(orig, spec(o, pay), 1024);
  ASSERT_TRUE(r.ok()) << static_cast<int>(r.error);
  orig.resize(r.len);
  PacketView v;
  ASSERT_EQ(parse_packet(orig, ParseOptions{.pmtu = 1024}, v), Reject::kNone);
  ASSERT_EQ(v.reth != nullptr, has.reth);
  ASSERT_EQ(v.atomic != nullptr, has.atomic);
  ASSERT_EQ(v.imm != nullptr, has.imm);

  // The copy at an odd offset of a larger buffer: nothing may depend on the
  // original's alignment or on the copy's span ending with the frame.
  std::vector<uint8_t> store(copy_at + orig.size() + 64, 0);
  std::copy(orig.begin(), orig.end(), store.begin() + static_cast<std::ptrdiff_t>(copy_at));
  const std::span<const uint8_t> copy(store.data() + copy_at, store.size() - copy_at);
  const PacketView c = rebase_view(v, copy);
  const uint8_t* from = orig.data();
  const uint8_t* to = copy.data();

  EXPECT_EQ(c.frame.data(), to);
  EXPECT_EQ(c.frame.size(), orig.size());
  EXPECT_EQ(c.eth, same_offset(v.eth, from, to));
  EXPECT_EQ(c.ip, same_offset(v.ip, from, to));
  EXPECT_EQ(c.udp, same_offset(v.udp, from, to));
  EXPECT_EQ(c.bth, same_offset(v.bth, from, to));
  EXPECT_EQ(c.deth, same_offset(v.deth, from, to));
  EXPECT_EQ(c.reth, same_offset(v.reth, from, to));
  EXPECT_EQ(c.atomic, same_offset(v.atomic, from, to));
  EXPECT_EQ(c.aeth, same_offset(v.aeth, from, to));
  EXPECT_EQ(c.atomic_ack, same_offset(v.atomic_ack, from, to));
  EXPECT_EQ(c.imm, same_offset(v.imm, from, to));
  EXPECT_EQ(c.ieth, same_offset(v.ieth, from, to));
  EXPECT_EQ(c.payload.data(), same_offset(v.payload.data(), from, to));
  EXPECT_EQ(c.payload.size(), payload_len);
  EXPECT_EQ(c.opcode, o);
  EXPECT_EQ(c.info, v.info);
  EXPECT_EQ(c.pad, v.pad);
  EXPECT_EQ(c.icrc, v.icrc);

  // The original is gone (its buffer reused): the copy's view reads the
  // values the frame carried.
  std::fill(orig.begin(), orig.end(), uint8_t{0xEE});
  ASSERT_NE(c.eth, nullptr);
  EXPECT_EQ(c.eth->dst, (MacAddr{0x02, 0, 0, 0, 0, 2}));
  ASSERT_NE(c.ip, nullptr);
  EXPECT_EQ(c.ip->dst.value(), 0x0A000002u);
  ASSERT_NE(c.bth, nullptr);
  EXPECT_EQ(c.bth->dest_qp(), 0x123456u);
  EXPECT_EQ(c.bth->psn(), Psn(0xFFFFF0));
  EXPECT_TRUE(c.bth->ack_req());
  if (c.reth != nullptr) {
    EXPECT_EQ(c.reth->va.value(), 0x1122334455667788ull);
    EXPECT_EQ(c.reth->rkey.value(), 0xA1B2C3D4u);
    EXPECT_EQ(c.reth->dma_len.value(), 3u * 1024u);
  }
  if (c.atomic != nullptr) {
    EXPECT_EQ(c.atomic->va.value(), 0x1122334455667788ull);
    EXPECT_EQ(c.atomic->swap_add.value(), 0x0102030405060708ull);
    EXPECT_EQ(c.atomic->compare.value(), 0x1112131415161718ull);
  }
  if (c.imm != nullptr) {
    EXPECT_EQ(c.imm->imm.value(), 0xFEEDF00Du);
  }
  EXPECT_TRUE(std::equal(c.payload.begin(), c.payload.end(), pay.begin(), pay.end()));

  // The copy parses to the same view.
  PacketView again;
  ASSERT_EQ(parse_packet(c.frame, ParseOptions{.pmtu = 1024}, again), Reject::kNone);
  EXPECT_EQ(again.bth, c.bth);
  EXPECT_EQ(again.reth, c.reth);
  EXPECT_EQ(again.imm, c.imm);
  EXPECT_EQ(again.atomic, c.atomic);
  EXPECT_EQ(again.payload.data(), c.payload.data());
}

TEST(WireRebase, SendWithImmediate) { check_rebase(Opcode::kSendOnlyImm, 300, 3, {.imm = true}); }

TEST(WireRebase, WriteFirstWithReth) { check_rebase(Opcode::kWriteFirst, 1024, 5, {.reth = true}); }

TEST(WireRebase, ReadRequestAndAtomic) {
  check_rebase(Opcode::kReadRequest, 0, 1, {.reth = true});
  check_rebase(Opcode::kFetchAdd, 0, 7, {.atomic = true});
}

}  // namespace
}  // namespace dpdat::wire
