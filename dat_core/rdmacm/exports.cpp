// librdmacm.so.1: the rdma_cm entry points, each forwarded to its dpdat_
// twin in dpdat's libibverbs.so.1 (funcs.hpp), and the rsocket calls, which
// dpdat does not offer: they fail with ENOSYS.

#include <rdma/rsocket.h>

#include <cerrno>

#include "funcs.hpp"

#define DPDAT_EXPORT extern "C" __attribute__((visibility("default")))

#define DPDAT_RDMACM_FORWARD(ret, name, params, args) \
  DPDAT_EXPORT ret name params { return dpdat_##name args; }
DPDAT_RDMACM_FUNCS(DPDAT_RDMACM_FORWARD)
#undef DPDAT_RDMACM_FORWARD

namespace {
template <typename T>
T no_rsockets(T r) {
  errno = ENOSYS;
  return r;
}
}  // namespace

DPDAT_EXPORT int rsocket(int, int, int) { return no_rsockets(-1); }
DPDAT_EXPORT int rbind(int, const sockaddr*, socklen_t) { return no_rsockets(-1); }
DPDAT_EXPORT int rlisten(int, int) { return no_rsockets(-1); }
DPDAT_EXPORT int raccept(int, sockaddr*, socklen_t*) { return no_rsockets(-1); }
DPDAT_EXPORT int rconnect(int, const sockaddr*, socklen_t) { return no_rsockets(-1); }
DPDAT_EXPORT int rshutdown(int, int) { return no_rsockets(-1); }
DPDAT_EXPORT int rclose(int) { return no_rsockets(-1); }
DPDAT_EXPORT ssize_t rrecv(int, void*, size_t, int) { return no_rsockets<ssize_t>(-1); }
DPDAT_EXPORT ssize_t rrecvfrom(int, void*, size_t, int, sockaddr*, socklen_t*) {
  return no_rsockets<ssize_t>(-1);
}
DPDAT_EXPORT ssize_t rrecvmsg(int, msghdr*, int) { return no_rsockets<ssize_t>(-1); }
DPDAT_EXPORT ssize_t rsend(int, const void*, size_t, int) { return no_rsockets<ssize_t>(-1); }
DPDAT_EXPORT ssize_t rsendto(int, const void*, size_t, int, const sockaddr*, socklen_t) {
  return no_rsockets<ssize_t>(-1);
}
DPDAT_EXPORT ssize_t rsendmsg(int, const msghdr*, int) { return no_rsockets<ssize_t>(-1); }
DPDAT_EXPORT ssize_t rread(int, void*, size_t) { return no_rsockets<ssize_t>(-1); }
DPDAT_EXPORT ssize_t rreadv(int, const iovec*, int) { return no_rsockets<ssize_t>(-1); }
DPDAT_EXPORT ssize_t rwrite(int, const void*, size_t) { return no_rsockets<ssize_t>(-1); }
DPDAT_EXPORT ssize_t rwritev(int, const iovec*, int) { return no_rsockets<ssize_t>(-1); }
DPDAT_EXPORT int rpoll(pollfd*, nfds_t, int) { return no_rsockets(-1); }
DPDAT_EXPORT int rselect(int, fd_set*, fd_set*, fd_set*, timeval*) { return no_rsockets(-1); }
DPDAT_EXPORT int rgetpeername(int, sockaddr*, socklen_t*) { return no_rsockets(-1); }
DPDAT_EXPORT int rgetsockname(int, sockaddr*, socklen_t*) { return no_rsockets(-1); }
DPDAT_EXPORT int rsetsockopt(int, int, int, const void*, socklen_t) { return no_rsockets(-1); }
DPDAT_EXPORT int rgetsockopt(int, int, int, void*, socklen_t*) { return no_rsockets(-1); }
DPDAT_EXPORT int rfcntl(int, int, ...) { return no_rsockets(-1); }
DPDAT_EXPORT off_t riomap(int, void*, size_t, int, int, off_t) { return no_rsockets<off_t>(-1); }
DPDAT_EXPORT int riounmap(int, void*, size_t) { return no_rsockets(-1); }
DPDAT_EXPORT size_t riowrite(int, const void*, size_t, off_t, int) {
  return no_rsockets<size_t>(0);
}
