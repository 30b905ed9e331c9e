// Several engines per interface (engines=) over the simulated link: EPs are
// spread over the engines, EPs on different engines exchange verified data,
// connections come and go while others carry traffic, posts from several
// threads to one EP keep each thread's order, the progress threads (one per
// engine) end with the interface's last IA, housekeeping's tries for every
// token are paced, and a lossless run needs no retransmission timeout.  The simulated link receives
// on one queue only (it cannot steer), so every frame for engine 1 is handed over by engine 0: the
// software hand-off is what runs here.

#include <dirent.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "ops_qp_attr.hpp"
#include "proto_fixture.hpp"
#include "shard.hpp"

namespace dpdat::proto {
namespace {

constexpr size_t kEps = 4;

// The process's engine progress threads (named dpdat-prog<i>); other
// threads of the process (the test runner's, the simulated wire's) may come
// and go and are not counted.
int thread_count() {
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    if (std::getline(comm, name) && name.rfind("dpdat-prog", 0) == 0) ++n;
  }
  closedir(d);
  return n;
}

class ProtoEnginesTest : public ProtoTest {
 protected:
  // Both ends with `engines` engines and the given progress modes, and
  // kEps connected EP pairs (pair 0 is a_/b_ themselves).
  bool open_engines(uint32_t engines, const std::string& pa, const std::string& pb,
                    const std::string& extra = "") {
    const std::string n = std::to_string(engines);
    const IfaceConfig ca =
        config("eng_a_" + n + pa, "ring=0;ip=10.9.0.1;engines=" + n + ";progress=" + pa + extra);
    const IfaceConfig cb =
        config("eng_b_" + n + pb, "ring=1;ip=10.9.0.2;engines=" + n + ";progress=" + pb + extra);
    // An end this process opened before with other settings cannot be opened
    // again (interfaces live for the process): false (under ctest every test
    // is a process of its own).
    for (const IfaceConfig* c : {&ca, &cb}) {
      Ia* ia = nullptr;
      if (!ia_open(*c, 16, nullptr, nullptr, &ia).ok()) return false;
      EXPECT_TRUE(ia_close(ia, false).ok());
    }
    a_.open(ca);
    b_.open(cb);
    EXPECT_EQ(a_.ia->iface->shards.size(), engines);
    EXPECT_EQ(b_.ia->iface->shards.size(), engines);
    xa_.resize(kEps - 1);
    xb_.resize(kEps - 1);
    for (size_t i = 0; i + 1 < kEps; ++i) {
      xa_[i].open_on(a_.ia);
      xb_[i].open_on(b_.ia);
    }
    return true;
  }
  Side& sa(int i) { return i == 0 ? a_ : xa_[static_cast<size_t>(i - 1)]; }
  Side& sb(int i) { return i == 0 ? b_ : xb_[static_cast<size_t>(i - 1)]; }

  // Connects pair i (b accepts on its own EP); a PSP per pair and round.
  void connect_pair(int i, uint64_t round = 0) {
    connect_sides(sa(i), sb(i), kQual + static_cast<uint64_t>(i) + 100 * round);
  }
  // x's EP connects to y's, which accepts on a PSP of `qual`.
  void connect_sides(Side& x, Side& y, uint64_t qual) {
    ASSERT_TRUE(psp_create(y.ia, qual, y.cr, 0, &y.psp).ok());
    ASSERT_TRUE(ep_connect(x.ep, kIpB, qual, kWaitUs, nullptr, 0).ok());
    const Event req = next_event(y.cr);
    ASSERT_EQ(req.num, EventNum::kConnRequest);
    ASSERT_TRUE(cr_accept(req.cr, y.ep, nullptr, 0).ok());
    ASSERT_EQ(next_event(x.conn).num, EventNum::kEstablished);
    ASSERT_EQ(next_event(y.conn).num, EventNum::kEstablished);
  }

  // WRITE, SEND and READ on pair i, each verified byte for byte.
  void verified_traffic(int i, size_t len, uint32_t seed) {
    Side& x = sa(i);
    Side& y = sb(i);
    Mem src, dst, rcv, back;
    x.reg(src, len);
    y.reg(dst, len);
    y.reg(rcv, len);
    x.reg(back, len);
    fill(src.buf, seed);
    const rc::Sge s = src.sge();
    const RemoteSeg rdst = dst.remote();
    PostArgs w;
    w.op = rc::WrOp::kWrite;
    w.sge = &s;
    w.nsge = 1;
    w.remote = &rdst;
    w.cookie = 1;
    ASSERT_TRUE(ep_post(x.ep, w).ok());
    Event ev = next_event(x.req);
    ASSERT_EQ(ev.num, EventNum::kDto);
    ASSERT_EQ(ev.status, DtoStatus::kSuccess);
    EXPECT_EQ(dst.buf, src.buf) << "WRITE on pair " << i;

    const rc::Sge r = rcv.sge();
    ASSERT_TRUE(ep_post_recv(y.ep, &r, 1, 9, cflag::kEvdThreshold).ok());
    PostArgs snd = w;
    snd.op = rc::WrOp::kSend;
    snd.remote = nullptr;
    snd.cookie = 2;
    ASSERT_TRUE(ep_post(x.ep, snd).ok());
    ev = next_event(x.req);
    ASSERT_EQ(ev.status, DtoStatus::kSuccess);
    ev = next_event(y.recv);
    ASSERT_EQ(ev.status, DtoStatus::kSuccess);
    EXPECT_EQ(ev.length, len);
    EXPECT_EQ(rcv.buf, src.buf) << "SEND on pair " << i;

    const rc::Sge b = back.sge();
    PostArgs rd = w;
    rd.op = rc::WrOp::kRead;
    rd.sge = &b;
    rd.cookie = 3;
    ASSERT_TRUE(ep_post(x.ep, rd).ok());
    ev = next_event(x.req);
    ASSERT_EQ(ev.status, DtoStatus::kSuccess);
    EXPECT_EQ(back.buf, dst.buf) << "READ on pair " << i;
  }

  uint64_t timeouts() const {
    uint64_t t = 0;
    for (const Side* s : {&a_, &b_})
      for (const auto& sh : s->ia->iface->shards)
        sh->engine->for_each_qp([&t](const rc::Qp& q) { t += q.counters().timeouts; });
    return t;
  }

  void TearDown() override {
    for (auto& x : xa_) x.close();
    for (auto& x : xb_) x.close();
    ProtoTest::TearDown();
  }

  std::vector<Side> xa_, xb_;
};

TEST_F(ProtoEnginesTest, EpsSpreadOverEnginesExchangeVerifiedData) {
  ASSERT_TRUE(open_engines(2, "inline", "inline"));
  // EPs created in turn go to the engine with the fewest: 0, 1, 0, 1 on
  // both sides, so pair i's ends are on engines of the same index.
  for (int i = 0; i < static_cast<int>(kEps); ++i) {
    ASSERT_NE(sa(i).ep->shard, nullptr);
    EXPECT_EQ(sa(i).ep->shard->index, static_cast<uint32_t>(i % 2));
    EXPECT_EQ(sb(i).ep->shard->index, static_cast<uint32_t>(i % 2));
    EXPECT_EQ(sa(i).ep->qp->qpn() >> rc::EngineGroup::kIndexShift, static_cast<uint32_t>(i % 2));
  }
  for (int i = 0; i < static_cast<int>(kEps); ++i) connect_pair(i);
  for (int i = 0; i < static_cast<int>(kEps); ++i)
    verified_traffic(i, 64 * 1024 + 17, static_cast<uint32_t>(i));
  // Engine 1 received nothing from the link itself: engine 0 handed its
  // frames over (the simulated link cannot steer).
  const auto& sh = b_.ia->iface->shards;
  EXPECT_GT(sh[0]->engine->counters().handed_off, 0u);
  EXPECT_GT(sh[1]->engine->counters().handed_in, 0u);
  EXPECT_GT(sh[1]->engine->counters().tx_frames, 0u);
  // Retransmission timeouts are not asserted: on a loaded machine a
  // test thread descheduled for over a millisecond (rto_min_us) outlasts it.
  // They are printed.
  std::printf("retransmission timeouts: %llu\n", static_cast<unsigned long long>(timeouts()));
}

// The passive side's EP moves at accept to the engine of the index the
// active side's EP is on (the engine bits of its queue pair number), taking
// the receives it had posted along in order: on a link that delivers a frame
// on the queue it was sent from, no frame of the connection is handed over.
TEST_F(ProtoEnginesTest, ThePassiveEpMovesToTheActiveEpsEngineWithItsReceives) {
  ASSERT_TRUE(open_engines(2, "inline", "inline"));
  Side& x = sa(0);  // engine 0
  Side& y = sb(1);  // engine 1 until it accepts
  ASSERT_EQ(x.ep->shard->index, 0u);
  ASSERT_EQ(y.ep->shard->index, 1u);
  constexpr size_t kRecvs = 3, kLen = 3000;
  Mem rcv[kRecvs], src[kRecvs];
  for (size_t k = 0; k < kRecvs; ++k) {
    y.reg(rcv[k], kLen);
    x.reg(src[k], kLen);
    fill(src[k].buf, 70 + static_cast<uint32_t>(k));
    const rc::Sge r = rcv[k].sge();
    ASSERT_TRUE(ep_post_recv(y.ep, &r, 1, 100 + k, cflag::kEvdThreshold).ok());
  }
  // What its queue pair may serve moves with it too: remote READs only.
  ASSERT_TRUE(qp_set_remote_access(y.ep, rc::priv::kRemoteRead).ok());
  connect_sides(x, y, kQual);
  if (HasFatalFailure()) return;
  EXPECT_EQ(y.ep->shard->index, 0u);
  EXPECT_EQ(y.ep->qp->qpn() >> rc::EngineGroup::kIndexShift, 0u);
  // Created in turn, b's EPs were on engines 0, 1, 0, 1; y (the second) moved.
  EXPECT_EQ(b_.ia->iface->shards[0]->eps, 3u);
  EXPECT_EQ(b_.ia->iface->shards[1]->eps, 1u);
  for (size_t k = 0; k < kRecvs; ++k) {
    const rc::Sge s = src[k].sge();
    PostArgs p;
    p.op = rc::WrOp::kSend;
    p.sge = &s;
    p.nsge = 1;
    p.cookie = k;
    ASSERT_TRUE(ep_post(x.ep, p).ok());
    ASSERT_EQ(next_event(x.req).status, DtoStatus::kSuccess);
  }
  for (size_t k = 0; k < kRecvs; ++k) {
    const Event ev = next_event(y.recv);
    ASSERT_EQ(ev.status, DtoStatus::kSuccess);
    EXPECT_EQ(ev.cookie, 100 + k) << "the receives keep their order";
    EXPECT_EQ(ev.length, kLen);
    EXPECT_EQ(rcv[k].buf, src[k].buf) << "SEND " << k;
  }
  Mem dst;
  y.reg(dst, kLen);
  const rc::Sge s = src[0].sge();
  const RemoteSeg rdst = dst.remote();
  PostArgs w;
  w.op = rc::WrOp::kWrite;
  w.sge = &s;
  w.nsge = 1;
  w.remote = &rdst;
  w.cookie = 9;
  ASSERT_TRUE(ep_post(x.ep, w).ok());
  EXPECT_EQ(next_event(x.req).status, DtoStatus::kRemoteAccess) << "a WRITE the QP does not serve";
}

// An EP goes to the engine of the CPU its creating thread is pinned to; a
// thread that may run on several CPUs does not count, whichever it runs on
// at that moment (else one thread creating every EP would put them all on
// one engine): its EPs go to the engine with the fewest.
TEST_F(ProtoEnginesTest, AnEpGoesToTheEngineOfTheCpuItsCreatorIsPinnedTo) {
  cpu_set_t all;
  CPU_ZERO(&all);
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  if (!CPU_ISSET(0, &all) || !CPU_ISSET(1, &all)) GTEST_SKIP() << "needs CPUs 0 and 1";
  ASSERT_TRUE(open_engines(2, "inline", "inline", ";cpus=0-1"));  // 2 EPs on each engine
  auto create_on = [this](int cpu) {                              // cpu -1: CPUs 0 and 1
    uint32_t index = UINT32_MAX;
    std::thread t([&] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu < 0 ? 0u : static_cast<unsigned>(cpu), &set);
      if (cpu < 0) CPU_SET(1u, &set);
      if (sched_setaffinity(0, sizeof set, &set) != 0) return;
      Side extra;
      extra.open_on(b_.ia);
      index = extra.ep->shard->index;
      EXPECT_TRUE(ep_free(extra.ep).ok());  // the counts stay 2 and 2
      extra.close();
    });
    t.join();
    return index;
  };
  EXPECT_EQ(create_on(1), 1u) << "pinned to engine 1's CPU, though engine 0 has as few EPs";
  EXPECT_EQ(create_on(0), 0u);
  for (int i = 0; i < 20; ++i)  // whichever of the two CPUs it runs on
    ASSERT_EQ(create_on(-1), 0u) << "unpinned: the fewest EPs, the lowest index among equals";
}

// Each progress mode runs per engine: a passive side with its own threads
// serves one-sided traffic while its consumer calls nothing.
class ProtoEnginesModeTest : public ProtoEnginesTest,
                             public ::testing::WithParamInterface<const char*> {};

TEST_P(ProtoEnginesModeTest, PassiveEnginesProgressOnTheirOwn) {
  ASSERT_TRUE(open_engines(2, "inline", GetParam()));
  for (int i = 0; i < 2; ++i) connect_pair(i);
  for (int i = 0; i < 2; ++i) verified_traffic(i, 8 * 1024, 40 + static_cast<uint32_t>(i));
}

INSTANTIATE_TEST_SUITE_P(Modes, ProtoEnginesModeTest,
                         ::testing::Values("inline", "adaptive", "busy"));

TEST_F(ProtoEnginesTest, ConnectionsComeAndGoUnderTraffic) {
  ASSERT_TRUE(open_engines(2, "inline", "adaptive"));
  connect_pair(0);  // engine 0 carries WRITEs throughout
  Mem src, dst;
  a_.reg(src, 4096);
  b_.reg(dst, 4096);
  const rc::Sge s = src.sge();
  const RemoteSeg rdst = dst.remote();
  for (int round = 0; round < 3; ++round) {
    // Pair 1 (engine 1) connects, moves data and disconnects, while pair
    // 0's WRITEs keep going.
    fill(src.buf, 100 + static_cast<uint32_t>(round));
    PostArgs w;
    w.op = rc::WrOp::kWrite;
    w.sge = &s;
    w.nsge = 1;
    w.remote = &rdst;
    w.cookie = static_cast<uint64_t>(round);
    ASSERT_TRUE(ep_post(a_.ep, w).ok());
    if (round == 0) {
      connect_pair(1);
    } else {
      // Reconnect pair 1 on fresh EPs (a disconnected EP is not reused).
      xa_[0].close();
      xb_[0].close();
      xa_[0].open_on(a_.ia);
      xb_[0].open_on(b_.ia);
      connect_pair(1, static_cast<uint64_t>(round));
    }
    verified_traffic(1, 3000, 7 + static_cast<uint32_t>(round));
    ASSERT_TRUE(ep_disconnect(sa(1).ep, false).ok());
    EXPECT_EQ(next_event(sa(1).conn).num, EventNum::kDisconnected);
    EXPECT_EQ(next_event(sb(1).conn).num, EventNum::kDisconnected);
    const Event ev = next_event(a_.req);
    ASSERT_EQ(ev.status, DtoStatus::kSuccess);
    EXPECT_EQ(dst.buf, src.buf);
  }
}

TEST_F(ProtoEnginesTest, PostsFromSeveralThreadsKeepEachThreadsOrder) {
  ASSERT_TRUE(open_engines(2, "adaptive", "adaptive"));
  connect_pair(1);  // engine 1's pair
  constexpr int kThreads = 3;
  constexpr uint32_t kPerThread = 60;
  constexpr size_t kMsg = 8;
  Mem src, rcv;
  sa(1).reg(src, kThreads * kPerThread * kMsg);
  sb(1).reg(rcv, kThreads * kPerThread * kMsg);
  // Receives first, then the senders: message payload = (thread, seq).
  for (uint32_t i = 0; i < kThreads * kPerThread; ++i) {
    const rc::Sge r = rcv.sge(i * kMsg, kMsg);
    ASSERT_TRUE(ep_post_recv(sb(1).ep, &r, 1, i, cflag::kEvdThreshold).ok());
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      for (uint32_t k = 0; k < kPerThread; ++k) {
        const size_t off = (static_cast<size_t>(t) * kPerThread + k) * kMsg;
        const uint32_t words[2] = {static_cast<uint32_t>(t), k};
        std::memcpy(src.buf.data() + off, words, sizeof words);
        const rc::Sge s = src.sge(off, kMsg);
        PostArgs p;
        p.op = rc::WrOp::kSend;
        p.sge = &s;
        p.nsge = 1;
        p.cookie = off;
        p.cflags = cflag::kSuppress;  // unsignalled: nobody reaps these here
        Status st;
        do {  // a full queue is back-pressure: try again
          st = ep_post(sa(1).ep, p);
          if (st.type == Type::INSUFFICIENT_RESOURCES) std::this_thread::yield();
        } while (st.type == Type::INSUFFICIENT_RESOURCES);
        if (!st.ok()) failures++;
      }
    });
  for (auto& t : ts) t.join();
  ASSERT_EQ(failures.load(), 0);
  uint32_t next[kThreads] = {};
  for (uint32_t i = 0; i < kThreads * kPerThread; ++i) {
    const Event ev = next_event(sb(1).recv);
    ASSERT_EQ(ev.status, DtoStatus::kSuccess);
    uint32_t words[2];
    std::memcpy(words, rcv.buf.data() + ev.cookie * kMsg, sizeof words);
    ASSERT_LT(words[0], static_cast<uint32_t>(kThreads));
    EXPECT_EQ(words[1], next[words[0]]) << "thread " << words[0] << " out of order";
    next[words[0]] = words[1] + 1;
  }
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(next[t], kPerThread);
}

// Inline progress: a send posted behind a signalled send whose completion is
// still to come leaves with the consumer's next poll, one burst for all such
// posts; a send with no completion pending (the first, or after every one
// was reaped) leaves at once, so a consumer that posts and then waits
// outside the API is not stranded.  (No thread but the test's drives.)
TEST_F(ProtoEnginesTest, InlinePostsBehindAPendingCompletionLeaveWithTheNextPoll) {
  ASSERT_TRUE(open_engines(1, "inline", "inline"));
  connect_pair(0);
  constexpr size_t kMsgs = 8, kLen = 64;
  Mem src, dst;
  a_.reg(src, kMsgs * kLen);
  b_.reg(dst, kMsgs * kLen);
  fill(src.buf, 41);
  const rc::Engine& e = *a_.ia->iface->shards[0]->engine;
  auto tx = [&e] { return e.counters().tx_frames; };
  auto post = [&](size_t k) {
    const rc::Sge s = src.sge(k * kLen, kLen);
    const RemoteSeg r = dst.remote(k * kLen);
    PostArgs w;
    w.op = rc::WrOp::kWrite;
    w.sge = &s;
    w.nsge = 1;
    w.remote = &r;
    w.cookie = k + 1;
    return ep_post(a_.ep, w);
  };
  for (int round = 0; round < 2; ++round) {
    const uint64_t t0 = tx();
    ASSERT_TRUE(post(0).ok());
    const uint64_t t1 = tx();
    EXPECT_EQ(t1, t0 + 1) << "round " << round << ": nothing pending, the WRITE leaves at once";
    for (size_t k = 1; k < kMsgs; ++k) ASSERT_TRUE(post(k).ok());
    EXPECT_EQ(tx(), t1) << "round " << round
                        << ": WRITEs behind a pending completion left one by one";
    for (size_t k = 0; k < kMsgs; ++k) {
      const Event ev = next_event(a_.req);
      ASSERT_EQ(ev.num, EventNum::kDto);
      ASSERT_EQ(ev.status, DtoStatus::kSuccess);
      EXPECT_EQ(ev.cookie, k + 1);
    }
    EXPECT_GE(tx(), t1 + kMsgs - 1) << "round " << round;
    EXPECT_EQ(dst.buf, src.buf) << "round " << round;
    std::fill(dst.buf.begin(), dst.buf.end(), uint8_t{0});
  }
}

// Housekeeping takes every engine's token at once.  A try that finds one
// held is counted and not repeated, by engine 0's driver or by a consumer of
// another engine taking engine 0 up, for kControlRetryNs; once housekeeping
// is kControlJoinNs late, the step waits for the tokens.  (Inline progress:
// no thread but the test's drives.)
TEST_F(ProtoEnginesTest, HousekeepingTriesArePacedAndLateOnesWait) {
  ASSERT_TRUE(open_engines(2, "inline", "inline"));
  for (int i = 0; i < 2; ++i) connect_pair(i);
  Iface* f = a_.ia->iface;
  ASSERT_EQ(f->cm_pending.load(), 0u);
  Shard& s0 = *f->shards[0];
  Shard& s1 = *f->shards[1];
  auto steps = [](const Shard& s) { return s.engine->counters().consumer_steps; };
  auto deferred = [&s0] { return s0.engine->counters().control_deferred; };
  const uint64_t t = now_ns();

  // Due: a consumer of engine 1 takes engine 0 up and runs the pass.
  uint64_t steps0 = steps(s0);
  f->next_housekeeping.store(t - 1000);
  f->drive(t, true, 1u << 1);
  EXPECT_EQ(steps(s0), steps0 + 1) << "due housekeeping: the consumer takes engine 0 up";
  EXPECT_GT(f->next_housekeeping.load(), t) << "the housekeeping pass did not run";

  // Engine 1's token held by another driver: the try fails, is counted, and
  // neither engine 0's driver nor a consumer of engine 1 tries again within
  // kControlRetryNs.
  ASSERT_TRUE(s1.token.try_lock());
  const uint64_t u = t + 10'000;
  f->next_housekeeping.store(u);
  const uint64_t d = deferred();
  f->drive(u, true, 1u);
  EXPECT_EQ(deferred(), d + 1);
  f->drive(u + kControlRetryNs / 2, true, 1u);
  EXPECT_EQ(deferred(), d + 1) << "engine 0's driver tried again within kControlRetryNs";
  s1.token.unlock();
  steps0 = steps(s0);
  f->drive(u + kControlRetryNs / 2, true, 1u << 1);
  EXPECT_EQ(steps(s0), steps0) << "a consumer of engine 1 took engine 0 up within kControlRetryNs";
  EXPECT_EQ(f->next_housekeeping.load(), u);
  f->drive(u + kControlRetryNs, true, 1u << 1);
  EXPECT_EQ(steps(s0), steps0 + 1);
  EXPECT_EQ(deferred(), d + 1);
  EXPECT_GT(f->next_housekeeping.load(), u + kControlRetryNs)
      << "the housekeeping pass did not run once every token was free";

  // Late, engine 1's token held by another thread for 20 ms: engine 0's
  // driver waits for it instead of deferring.
  std::atomic<bool> held{false};
  std::thread holder([&] {
    s1.token.lock();
    held = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    s1.token.unlock();
  });
  while (!held) std::this_thread::yield();
  const uint64_t v = now_ns();
  f->next_housekeeping.store(v - kControlJoinNs - 1000);
  const uint64_t d2 = deferred();
  const uint64_t waited = s0.engine->counters().control_wait_ns;
  f->drive(v, true, 1u);
  holder.join();
  EXPECT_EQ(deferred(), d2);
  EXPECT_GE(s0.engine->counters().control_wait_ns - waited, 5'000'000u)
      << "the wait for the token was not counted";
  EXPECT_GT(f->next_housekeeping.load(), v) << "late housekeeping was put off";
}

TEST_F(ProtoEnginesTest, ProgressThreadsEndWithTheLastIa) {
  const int before = thread_count();
  ASSERT_GE(before, 0);
  const IfaceConfig c = config("eng_threads", "ring=0;ip=10.9.0.1;engines=3;progress=adaptive");
  Ia* ia1 = nullptr;
  Ia* ia2 = nullptr;
  ASSERT_TRUE(ia_open(c, 16, nullptr, nullptr, &ia1).ok());
  EXPECT_EQ(thread_count(), before + 3) << "one progress thread per engine";
  ASSERT_TRUE(ia_open(c, 16, nullptr, nullptr, &ia2).ok());
  EXPECT_EQ(thread_count(), before + 3);
  ASSERT_TRUE(ia_close(ia1, false).ok());
  EXPECT_EQ(thread_count(), before + 3) << "an IA is still open";
  ASSERT_TRUE(ia_close(ia2, false).ok());
  EXPECT_EQ(thread_count(), before) << "the last IA's close ends the threads";
  // And they come back with the next open.
  ASSERT_TRUE(ia_open(c, 16, nullptr, nullptr, &ia1).ok());
  EXPECT_EQ(thread_count(), before + 3);
  ASSERT_TRUE(ia_close(ia1, false).ok());
  EXPECT_EQ(thread_count(), before);
}

TEST(ProtoEnginesConfig, EnginesAndCpusParse) {
  IfaceConfig c;
  std::string err;
  ASSERT_TRUE(parse_iface_config("ring=0;ip=10.0.0.1;engines=4;cpus=2-4,7", &c, &err)) << err;
  EXPECT_EQ(c.engines, 4u);
  EXPECT_EQ(c.cpus, (std::vector<int>{2, 3, 4, 7}));
  EXPECT_FALSE(parse_iface_config("ring=0;ip=10.0.0.1;engines=0", &c, &err));
  EXPECT_FALSE(parse_iface_config("ring=0;ip=10.0.0.1;engines=17", &c, &err));
  EXPECT_FALSE(parse_iface_config("ring=0;ip=10.0.0.1;engines=3;cpus=1-2", &c, &err));
  EXPECT_NE(err.find("cpus="), std::string::npos) << err;
  EXPECT_FALSE(parse_iface_config("ring=0;ip=10.0.0.1;cpus=3-1", &c, &err));
  EXPECT_FALSE(parse_iface_config("ring=0;ip=10.0.0.1;cpus=1,1", &c, &err));
  EXPECT_FALSE(parse_iface_config("ring=0;ip=10.0.0.1;cpus=a", &c, &err));
}

}  // namespace
}  // namespace dpdat::proto
