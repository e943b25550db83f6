// SPDX-License-Identifier: MIT
// roce-pcap: check and write RoCEv2 captures.
//
//   roce-pcap check [--no-ip-checksum] FILE...
//       One line per RoCEv2 frame (UDP destination port 4791, whatever the
//       source port): frame number, addresses, opcode, dest QP, PSN, AckReq,
//       payload length, ICRC ok/bad (or the reason the frame was rejected);
//       last `N packets, N ok, N bad`. Exit 1 if any is bad or none was found.
//   roce-pcap write OUT.pcap
//       Writes sample frames covering every opcode (IPv4, IPv6, 802.1Q).
//   roce-pcap rewrite IN.pcap OUT.pcap
//       Parses every RoCEv2 frame and writes it again from the parsed form
//       (lengths, checksums and ICRC recomputed); other frames are copied.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "stack/pcap/pcap_file.h"
#include "stack/wire/packet.h"
#include "tools/lib/samples.h"

using namespace roce;
using namespace roce::wire;

namespace {

// True if the frame is IPv4/IPv6 + UDP with destination port 4791, judged
// leniently (no validation): such frames are RoCEv2 and must parse.
bool LooksLikeRoce(ByteSpan f) {
  size_t off = 12;
  if (f.size() < off + 2) return false;
  uint16_t et = Load16(&f[off]);
  off += 2;
  while (et == kEtherTypeVlan) {
    if (f.size() < off + 4) return false;
    et = Load16(&f[off + 2]);
    off += 4;
  }
  size_t l4;
  if (et == kEtherTypeIpv4) {
    if (f.size() < off + 20 || f[off + 9] != kIpProtoUdp) return false;
    l4 = off + (f[off] & 0x0F) * 4u;
  } else if (et == kEtherTypeIpv6) {
    if (f.size() < off + 40 || f[off + 6] != kIpProtoUdp) return false;
    l4 = off + 40;
  } else {
    return false;
  }
  return f.size() >= l4 + 4 && Load16(&f[l4 + 2]) == kRoceV2Port;
}

int Check(const std::vector<std::string>& files, bool ip_csum) {
  uint64_t total = 0, ok = 0, bad = 0;
  ParseOptions opts;
  opts.verify_ip_checksum = ip_csum;
  for (const std::string& path : files) {
    auto frames = pcapio::ReadAll(path);
    if (!frames.ok()) {
      std::fprintf(stderr, "roce-pcap: %s\n", std::string(frames.status().message()).c_str());
      return 2;
    }
    if (files.size() > 1) std::printf("# %s\n", path.c_str());
    uint32_t num = 0;
    for (const pcapio::Frame& fr : *frames) {
      num++;
      if (!LooksLikeRoce(fr.data)) continue;
      total++;
      RocePacket p;
      opts.verify_icrc = false;
      Error e = ParseRoceFrame(fr.data, &p, opts);
      if (e != Error::kOk) {
        bad++;
        std::printf("%6u  bad: %s\n", num, ErrorName(e));
        continue;
      }
      const size_t l3len = p.ipv6 ? Ipv6Header::kLen + p.ip6.payload_length : p.ip4.total_length;
      const bool icrc_ok =
          ComputeIcrc(ByteSpan(fr.data).subspan(p.l3_offset, l3len - kIcrcLen)) == p.icrc;
      (icrc_ok ? ok : bad)++;
      std::printf("%6u  %s -> %s  %-34s qp=0x%06x psn=%u ack=%d len=%zu icrc=%s\n", num,
                  p.SrcIp().ToString().c_str(), p.DstIp().ToString().c_str(),
                  OpcodeName(p.bth.opcode), p.bth.dest_qp, p.bth.psn, p.bth.ack_req ? 1 : 0,
                  p.payload.size(), icrc_ok ? "ok" : "bad");
    }
  }
  std::printf("%llu packets, %llu ok, %llu bad\n", static_cast<unsigned long long>(total),
              static_cast<unsigned long long>(ok), static_cast<unsigned long long>(bad));
  return (total == 0 || bad != 0) ? 1 : 0;
}

int Write(const std::string& out) {
  auto w = pcapio::Writer::Open(out);
  if (!w.ok()) {
    std::fprintf(stderr, "roce-pcap: %s\n", std::string(w.status().message()).c_str());
    return 2;
  }
  uint64_t ts = 1'700'000'000'000'000'000ull;
  for (const auto& f : tools::SampleFrames()) (*w)->Write(ts += 1000, f.data(), f.size());
  std::printf("wrote %llu frames to %s\n", static_cast<unsigned long long>((*w)->frames()),
              out.c_str());
  return 0;
}

int Rewrite(const std::string& in, const std::string& out) {
  auto frames = pcapio::ReadAll(in);
  if (!frames.ok()) {
    std::fprintf(stderr, "roce-pcap: %s\n", std::string(frames.status().message()).c_str());
    return 2;
  }
  auto w = pcapio::Writer::Open(out);
  if (!w.ok()) {
    std::fprintf(stderr, "roce-pcap: %s\n", std::string(w.status().message()).c_str());
    return 2;
  }
  int rebuilt = 0;
  for (const pcapio::Frame& fr : *frames) {
    RocePacket p;
    if (ParseRoceFrame(fr.data, &p) == Error::kOk) {
      std::vector<uint8_t> b(fr.data.size() + 64);
      BuildOptions bo;
      bo.append_trailer = true;
      b.resize(BuildRoceFrame(p, b, bo));
      (*w)->Write(fr.ts_ns, b.data(), b.size());
      rebuilt++;
    } else {
      (*w)->Write(fr.ts_ns, fr.data.data(), fr.data.size());
    }
  }
  std::printf("rewrote %d RoCEv2 frames of %zu into %s\n", rebuilt, frames->size(), out.c_str());
  return 0;
}

int Usage() {
  std::fprintf(stderr,
               "usage: roce-pcap check [--no-ip-checksum] FILE...\n"
               "       roce-pcap write OUT.pcap\n"
               "       roce-pcap rewrite IN.pcap OUT.pcap\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  const std::string cmd = argv[1];
  if (cmd == "check") {
    std::vector<std::string> files;
    bool ip_csum = true;
    for (int i = 2; i < argc; i++) {
      if (std::strcmp(argv[i], "--no-ip-checksum") == 0)
        ip_csum = false;
      else
        files.push_back(argv[i]);
    }
    if (files.empty()) return Usage();
    return Check(files, ip_csum);
  }
  if (cmd == "write" && argc == 3) return Write(argv[2]);
  if (cmd == "rewrite" && argc == 4) return Rewrite(argv[2], argv[3]);
  return Usage();
}
