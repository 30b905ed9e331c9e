#pragma once
// Out-of-band bootstrap for the bench tool across processes, as perftest
// exchanges its connection data over TCP: a Unix-domain stream socket (a
// filesystem path, so it also works between network namespaces).  It carries
// only the connection parameters and the end-of-test handshake; all RDMA
// traffic goes over the DPDK link.

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace dpdat::tools {

class Oob {
 public:
  ~Oob() {
    if (fd_ >= 0) ::close(fd_);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (!unlink_.empty()) ::unlink(unlink_.c_str());
  }
  // Server: listen on `path` and accept one peer (waits up to timeout_ms).
  bool serve(const std::string& path, int timeout_ms, std::string* err) {
    sockaddr_un a{};
    if (!addr(path, &a, err)) return false;
    ::unlink(path.c_str());
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listen_fd_, 1) != 0)
      return fail("listen " + path, err);
    unlink_ = path;
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    fd_ = ::accept(listen_fd_, nullptr, nullptr);
    if (fd_ < 0) return fail("accept on " + path, err);
    return true;
  }
  // Client: connect to `path`, retrying until timeout_ms (the server may be
  // starting).
  bool connect(const std::string& path, int timeout_ms, std::string* err) {
    sockaddr_un a{};
    if (!addr(path, &a, err)) return false;
    for (int waited = 0;; waited += 50) {
      fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
      if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return true;
      if (fd_ >= 0) ::close(fd_);
      fd_ = -1;
      if (waited >= timeout_ms) return fail("connect " + path, err);
      ::usleep(50'000);
    }
  }
  template <typename T>
  bool send(const T& v) {
    return ::send(fd_, &v, sizeof v, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof v);
  }
  template <typename T>
  bool recv(T* v) {
    size_t got = 0;
    auto* p = reinterpret_cast<char*>(v);
    while (got < sizeof *v) {
      const ssize_t n = ::recv(fd_, p + got, sizeof *v - got, 0);
      if (n <= 0) return false;
      got += static_cast<size_t>(n);
    }
    return true;
  }
  // True when a message (or EOF) is waiting, without blocking.
  bool readable() {
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n > 0 || n == 0;
  }

 private:
  static bool addr(const std::string& path, sockaddr_un* a, std::string* err) {
    if (path.size() >= sizeof a->sun_path) {
      *err = "socket path too long: " + path;
      return false;
    }
    a->sun_family = AF_UNIX;
    std::memcpy(a->sun_path, path.c_str(), path.size() + 1);
    return true;
  }
  static bool fail(const std::string& what, std::string* err) {
    *err = what + ": " + std::strerror(errno);
    return false;
  }
  int fd_ = -1;
  int listen_fd_ = -1;
  std::string unlink_;
};

}  // namespace dpdat::tools
