// The queue pair's API for the layers above (qp_api.hpp), over the protocol's class.

#include "rc/qp/qp_api.hpp"

#include "rc/qp/qp.hpp"

namespace dpdat::rc::qp {

uint32_t number(const Qp& q) { return q.qpn(); }
QpState state(const Qp& q) { return q.state(); }
QpError error(const Qp& q) { return q.error(); }
const QpConfig& config(const Qp& q) { return q.config(); }
const QpCounters& counters(const Qp& q) { return q.counters(); }
size_t send_queue_used(const Qp& q) { return q.send_queue_used(); }
size_t recv_queue_used(const Qp& q) { return q.recv_queue_used(); }
PostResult post_send(Qp& q, const SendWr& wr) { return q.post_send(wr); }
PostResult post_recv(Qp& q, const RecvWr& wr) { return q.post_recv(wr); }
bool set_pmtu(Qp& q, uint32_t pmtu) { return q.set_pmtu(pmtu); }
void set_remote_access(Qp& q, uint32_t privs) { q.set_remote_access(privs); }
void set_rma_counters(Qp& q, std::atomic<uint64_t>* writes, std::atomic<uint64_t>* reads) {
  q.set_rma_counters(writes, reads);
}
bool connect(Qp& q, const PathInfo& path, wire::Psn sq_psn, wire::Psn rq_psn) {
  return q.connect(path, sq_psn, rq_psn);
}
bool set_requester(Qp& q, wire::Psn sq_psn, uint32_t retry_count, uint32_t rnr_retry,
                   uint64_t timeout_ns) {
  return q.set_requester(sq_psn, retry_count, rnr_retry, timeout_ns);
}
bool attach_srq(Qp& q, Srq* srq) { return q.attach_srq(srq); }
uint32_t take_srq_peak(Qp& q) { return q.take_srq_peak(); }
void take_recvs(Qp& q, std::vector<RecvWr>* out) { q.take_recvs(out); }
void ack_received(Qp& q, uint64_t now) { q.ack_received(now); }
void set_error(Qp& q, QpError why, uint64_t now) { q.set_error(why, now); }

}  // namespace dpdat::rc::qp
