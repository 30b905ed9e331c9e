#pragma once
// A client of a DPDK process's telemetry socket (dpdk_telemetry.v2): what
// dpdat-perf and dpdat-info read dpdat's live counters through.  dpdat's
// default EAL file prefix is "dpdat<pid>", so a process's socket is
// /var/run/dpdk/dpdat<pid>/dpdk_telemetry.v2.

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace dpdat::tools {

class TelemetryClient {
 public:
  TelemetryClient() = default;
  TelemetryClient(const TelemetryClient&) = delete;
  TelemetryClient& operator=(const TelemetryClient&) = delete;
  ~TelemetryClient() {
    if (fd_ >= 0) close(fd_);
  }
  static std::string socket_of(long pid) {
    return "/var/run/dpdk/dpdat" + std::to_string(pid) + "/dpdk_telemetry.v2";
  }
  // Connects and reads the greeting.  False when there is no such socket.
  bool open(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    if (fd_ < 0) return false;
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    char greeting[1024];
    return connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
           read(fd_, greeting, sizeof greeting) > 0;
  }
  // The answer's value (keyed by the command without its parameter), or
  // null on failure.
  nlohmann::json query(const std::string& cmd) {
    if (fd_ < 0 || write(fd_, cmd.data(), cmd.size()) != static_cast<ssize_t>(cmd.size()))
      return nullptr;
    std::string buf(1 << 16, '\0');
    const ssize_t n = read(fd_, buf.data(), buf.size());
    if (n <= 0) return nullptr;
    buf.resize(static_cast<size_t>(n));
    const auto j = nlohmann::json::parse(buf, nullptr, false);
    const std::string key = cmd.substr(0, cmd.find(','));
    if (!j.is_object() || !j.contains(key)) return nullptr;
    return j[key];
  }

 private:
  int fd_ = -1;
};

}  // namespace dpdat::tools
