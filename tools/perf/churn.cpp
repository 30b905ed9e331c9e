#include "churn.hpp"

#include <cstring>

#include "sysinfo.hpp"

namespace dpdat::perf {

namespace {

constexpr uint64_t kStageNs = 60'000'000'000ull;
constexpr uint64_t kReadCookie = 0x43485244;  // "CHRD"
constexpr uint32_t kChurnDepth = 4;

const char* stage_name(int st) {
  static const char* const kNames[] = {"idle", "connecting", "moving", "closing"};
  return kNames[st];
}

// The next event on `evd`, if any: false when none is queued.
bool next_event(DAT_EVD_HANDLE evd, DAT_EVENT* ev, DAT_RETURN* r) {
  *r = dat_evd_dequeue(evd, ev);
  return DAT_GET_TYPE(*r) != DAT_QUEUE_EMPTY;
}

void reject(DAT_CR_HANDLE cr) {
#ifdef DPDAT_PERF_DAT2
  (void)dat_cr_reject(cr, 0, nullptr);
#else
  (void)dat_cr_reject(cr);
#endif
}

}  // namespace

ClientChurn::ClientChurn(Side& s, const Layout& L, const sockaddr_in& peer, uint32_t conn_qual,
                         const DAT_RMR_TRIPLET& peer_region)
    : s_(s), L_(L), peer_(peer), qual_(conn_qual), region_(peer_region), slots_(L.churn) {}

ClientChurn::~ClientChurn() {
  for (Slot& sl : slots_) Side::free_conn(&sl.c);
}

bool ClientChurn::idle() const {
  for (const Slot& sl : slots_)
    if (sl.st != St::kIdle) return false;
  return true;
}

bool ClientChurn::step(std::string* err) {
  for (size_t j = 0; j < slots_.size(); ++j)
    if (!step_one(j, slots_[j], err)) {
      *err = "churned connection " + std::to_string(j) + ": " + *err;
      return false;
    }
  return true;
}

// A stage is stuck when it still waits 60 s after it began, judged after
// its events were taken: the loop that steps it may have been away (a long
// round on a loaded host) for most of that time, and what it waited for may
// have come meanwhile.
bool ClientChurn::step_one(size_t j, Slot& sl, std::string* err) {
  const St before = sl.st;
  if (!advance(j, sl, err)) return false;
  if (sl.st != St::kIdle && sl.st == before && now_ns() - sl.since_ns > kStageNs) {
    *err = std::string("stuck ") + stage_name(static_cast<int>(sl.st)) + " for 60 s (cycle " +
           std::to_string(cycles_) + ")";
    return false;
  }
  return true;
}

bool ClientChurn::advance(size_t j, Slot& sl, std::string* err) {
  const uint64_t now = now_ns();
  DAT_EVENT ev;
  DAT_RETURN r = DAT_SUCCESS;
  switch (sl.st) {
    case St::kIdle: {
      if (stopping_) return true;
      if (!s_.create_conn(&sl.c, kChurnDepth, err)) return false;
      sockaddr_in a = peer_;
      r = dat_ep_connect(sl.c.ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&a), qual_, 60'000'000, 0,
                         nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
      if (r != DAT_SUCCESS) {
        *err = dat_error("dat_ep_connect", r);
        return false;
      }
      sl.st = St::kConnecting;
      sl.since_ns = now;
      return true;
    }
    case St::kConnecting: {
      if (!next_event(sl.c.conn, &ev, &r)) return true;
      if (r != DAT_SUCCESS || ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
        *err = "no ESTABLISHED: event " + std::to_string(static_cast<int>(ev.event_number)) +
               (r != DAT_SUCCESS ? ", " + dat_error("dat_evd_dequeue", r) : "");
        return false;
      }
      sl.c.connected = true;
      sl.salt = static_cast<uint8_t>(cycles_ * 31 + j + 1);
      uint8_t* src = s_.data() + L_.churn_src(j);
      for (size_t i = 0; i < Layout::kChurnBytes; ++i) src[i] = pattern_byte(i, j + 100, sl.salt);
      // The cycle's number in front: no two cycles write the same bytes.
      const uint64_t stamp[2] = {cycles_ + 1, j};
      std::memcpy(src, stamp, sizeof stamp);
      std::memset(s_.data() + L_.churn_back(j), 0, Layout::kChurnBytes);
      // The READ is executed after the WRITE (one queue pair, in order):
      // it returns what the WRITE placed.
      DAT_LMR_TRIPLET l = s_.local(L_.churn_src(j), Layout::kChurnBytes);
      DAT_RMR_TRIPLET t = region_;
      rmr_address(t) += L_.churn_src(j);
      t.segment_length = seg_length(Layout::kChurnBytes);
      DAT_DTO_COOKIE ck;
      ck.as_64 = 1;
      r = dat_ep_post_rdma_write(sl.c.ep, 1, &l, ck, &t, DAT_COMPLETION_SUPPRESS_FLAG);
      if (r == DAT_SUCCESS) {
        l = s_.local(L_.churn_back(j), Layout::kChurnBytes);
        ck.as_64 = kReadCookie;
        r = dat_ep_post_rdma_read(sl.c.ep, 1, &l, ck, &t, DAT_COMPLETION_DEFAULT_FLAG);
      }
      if (r != DAT_SUCCESS) {
        *err = dat_error("dat_ep_post_rdma_write/read", r);
        return false;
      }
      sl.st = St::kMoving;
      sl.since_ns = now;
      return true;
    }
    case St::kMoving: {
      std::vector<Done> done;
      if (s_.reap(sl.c.req, &done, err) < 0) return false;
      bool read_done = false;
      for (const Done& d : done) read_done |= d.cookie == kReadCookie;
      if (!read_done) return true;
      if (std::memcmp(s_.data() + L_.churn_src(j), s_.data() + L_.churn_back(j),
                      Layout::kChurnBytes) != 0) {
        *err = "verify: the bytes read back differ from those written (cycle " +
               std::to_string(cycles_) + ")";
        return false;
      }
      r = dat_ep_disconnect(sl.c.ep, DAT_CLOSE_GRACEFUL_FLAG);
      if (r != DAT_SUCCESS) {
        *err = dat_error("dat_ep_disconnect", r);
        return false;
      }
      sl.st = St::kClosing;
      sl.since_ns = now;
      return true;
    }
    case St::kClosing: {
      if (!next_event(sl.c.conn, &ev, &r)) return true;
      if (r != DAT_SUCCESS || ev.event_number != DAT_CONNECTION_EVENT_DISCONNECTED) {
        *err = "no DISCONNECTED: event " + std::to_string(static_cast<int>(ev.event_number));
        return false;
      }
      Side::free_conn(&sl.c);
      sl.st = St::kIdle;
      ++cycles_;
      return true;
    }
  }
  return true;
}

ServerChurn::~ServerChurn() {
  for (Conn& c : open_) Side::free_conn(&c);
}

bool ServerChurn::step(std::string* err) {
  DAT_EVENT ev;
  DAT_RETURN r = DAT_SUCCESS;
  while (next_event(s_.cr_evd(), &ev, &r)) {
    if (r != DAT_SUCCESS || ev.event_number != DAT_CONNECTION_REQUEST_EVENT) {
      *err = "churn: unexpected event on the CR EVD";
      return false;
    }
    const DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
    if (open_.size() >= kMaxOpen) {
      reject(cr);
      continue;
    }
    Conn c;
    if (!s_.create_conn(&c, kChurnDepth, err)) {
      reject(cr);
      return false;
    }
    if (r = dat_cr_accept(cr, c.ep, 0, nullptr); r != DAT_SUCCESS) {
      Side::free_conn(&c);
      *err = dat_error("churn: dat_cr_accept", r);
      return false;
    }
    open_.push_back(c);
    ++accepted_;
  }
  for (size_t i = 0; i < open_.size();) {
    if (!next_event(open_[i].conn, &ev, &r)) {
      ++i;
      continue;
    }
    if (r != DAT_SUCCESS) {
      *err = dat_error("churn: dat_evd_dequeue", r);
      return false;
    }
    if (ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED) {
      open_[i].connected = true;
      continue;  // its next event is the disconnect
    }
    // Disconnected (or broken, timed out): the peer says which and fails.
    Side::free_conn(&open_[i]);
    open_[i] = open_.back();
    open_.pop_back();
    ++closed_;
  }
  return true;
}

}  // namespace dpdat::perf
