#pragma once
// Minimal classic-pcap writer (LINKTYPE_ETHERNET), for dumping frames that
// tshark/Wireshark can read.  Used by dpdat-wiredump and the interop tests.

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

namespace dpdat::wire {

class PcapWriter {
 public:
  explicit PcapWriter(const std::string& path) : f_(std::fopen(path.c_str(), "wb")) {
    if (f_ == nullptr) return;
    const uint32_t magic = 0xA1B2C3D4, snaplen = 65535, linktype = 1, zero = 0;
    const uint16_t vmaj = 2, vmin = 4;
    ok_ = put(magic) && put(vmaj) && put(vmin) && put(zero) && put(zero) && put(snaplen) &&
          put(linktype);
  }
  ~PcapWriter() {
    if (f_ != nullptr) std::fclose(f_);
  }
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  bool ok() const { return f_ != nullptr && ok_; }

  bool write(std::span<const uint8_t> frame, uint32_t ts_sec = 0, uint32_t ts_usec = 0) {
    const auto len = static_cast<uint32_t>(frame.size());
    ok_ = ok_ && put(ts_sec) && put(ts_usec) && put(len) && put(len) &&
          std::fwrite(frame.data(), 1, frame.size(), f_) == frame.size();
    return ok_;
  }

 private:
  template <typename T>
  bool put(T v) {
    return std::fwrite(&v, sizeof v, 1, f_) == 1;
  }
  std::FILE* f_;
  bool ok_ = false;
};

}  // namespace dpdat::wire
