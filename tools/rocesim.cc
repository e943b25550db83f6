// SPDX-License-Identifier: MIT
// rocesim: the RC protocol core over a simulated lossy link, checked by a
// reference model (tools/lib/rc_workload.h).
//
//   rocesim --seed S --messages N --loss P --reorder P [--reorder_depth D] --dup P --corrupt P [--qps K]
//           [--max-size B] [--min_size B] [--ops send,write,read] [--errors P] [--late_recv P] [--mtu M] [--window N] [--ipv6] [--ce P]
//
// Prints the configuration, the counters, and last a line
// `rocesim: N messages, N ok, N failed`; exits 0 only if every message is ok.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include <absl/flags/flag.h>
#include <absl/flags/parse.h>
#include <absl/flags/usage.h>
#include <absl/strings/str_format.h>
#include <absl/strings/str_split.h>

#include "tools/lib/rc_workload.h"

ABSL_FLAG(uint64_t, seed, 1, "random seed (workload and link)");
ABSL_FLAG(uint64_t, messages, 100000, "data operations to run and check");
ABSL_FLAG(double, loss, 0.0, "frame loss probability");
ABSL_FLAG(double, reorder, 0.0, "frame reorder probability");
ABSL_FLAG(uint32_t, reorder_depth, 8,
          "how late a held-back frame may arrive, in frame times (1..N, uniform): 8 models a "
          "little jitter, 64 an ECMP fabric with unequal paths");
ABSL_FLAG(double, dup, 0.0, "frame duplication probability");
ABSL_FLAG(double, corrupt, 0.0, "single-bit corruption probability");
ABSL_FLAG(double, ce, 0.0, "probability an ECN-capable frame is marked CE");
ABSL_FLAG(uint32_t, qps, 2, "QP pairs (alternating direction; every third responder uses an SRQ)");
ABSL_FLAG(uint32_t, max_size, 1u << 20, "largest message, bytes");
ABSL_FLAG(uint32_t, min_size, 0,
          "0: message sizes from the usual mix (mostly small); else uniform in [min_size, max_size]");
ABSL_FLAG(std::string, ops, "",
          "operations to post, comma separated from send, write, read (empty: all; a deliberate "
          "error, --errors, may still pick its own)");
ABSL_FLAG(double, errors, 0.002, "fraction of operations that deliberately violate access");
ABSL_FLAG(double, late_recv, 0.02,
          "fraction of receives posted late (RNR NAKs; their resends count as retransmissions)");
ABSL_FLAG(uint32_t, mtu, 0, "path MTU (0: random per QP from 256..4096)");
ABSL_FLAG(uint32_t, ack_timeout, 8,
          "local ACK timeout code (4.096 us * 2^code; 8: ~1 ms; ND2 connections use 19, ~2.1 s): it must exceed "
          "the round trip, queueing at a slow receiver (--rx_queue_us) included");
ABSL_FLAG(uint32_t, window, 32, "requester window in PSNs");
ABSL_FLAG(bool, repair, true, "selective repair: responders keep --ooo_window PSNs past a gap, requesters resend only the missing packet (QpTuning ooo_window, selective_repair: the default between two of our stacks); --norepair: go-back-N as towards rxe");
ABSL_FLAG(uint32_t, ooo_window, 256, "with --repair: PSNs a responder keeps past a gap (QpTuning::ooo_window; a power of two, at most 256)");
ABSL_FLAG(uint32_t, outstanding, 24, "operations in flight per QP pair");
ABSL_FLAG(bool, ipv6, false, "run over IPv6");
ABSL_FLAG(double, delay_us, 1.0, "one-way link delay, microseconds");
ABSL_FLAG(double, gbps, 100.0, "link rate per sender");
ABSL_FLAG(double, rx_gbps, 0, "a receiver slower than the link: frames leave its buffer at this rate (0: it keeps up)");
ABSL_FLAG(double, rx_queue_us, 20, "with --rx_gbps: the receive buffer, in microseconds of draining; more is tail-dropped (bursts of loss, as at a kernel tap)");
ABSL_FLAG(std::string, trace, "", "write a packet trace to this file");
ABSL_FLAG(std::string, dump_on_failure, "", "write the last frames to this file at the first failure");
ABSL_FLAG(std::string, events, "", "write QP protocol events to this file");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("RC protocol core over a simulated lossy link");
  absl::ParseCommandLine(argc, argv);
  roce::sim::WorkloadConfig c;
  c.seed = absl::GetFlag(FLAGS_seed);
  c.messages = absl::GetFlag(FLAGS_messages);
  c.qps = std::max<uint32_t>(1, absl::GetFlag(FLAGS_qps));
  c.imp.loss = absl::GetFlag(FLAGS_loss);
  c.imp.reorder = absl::GetFlag(FLAGS_reorder);
  c.imp.reorder_depth = std::max<uint32_t>(1, absl::GetFlag(FLAGS_reorder_depth));
  c.imp.dup = absl::GetFlag(FLAGS_dup);
  c.imp.corrupt = absl::GetFlag(FLAGS_corrupt);
  c.imp.ce_mark = absl::GetFlag(FLAGS_ce);
  c.imp.delay_ns = static_cast<uint64_t>(absl::GetFlag(FLAGS_delay_us) * 1000);
  c.imp.gbps = absl::GetFlag(FLAGS_gbps);
  c.imp.rx_gbps = absl::GetFlag(FLAGS_rx_gbps);
  c.imp.rx_queue_ns = static_cast<uint64_t>(absl::GetFlag(FLAGS_rx_queue_us) * 1000);
  c.max_size = absl::GetFlag(FLAGS_max_size);
  c.min_size = absl::GetFlag(FLAGS_min_size);
  for (absl::string_view op : absl::StrSplit(absl::GetFlag(FLAGS_ops), ',', absl::SkipEmpty())) {
    if (op == "send") c.ops |= roce::sim::kOpSend;
    else if (op == "write") c.ops |= roce::sim::kOpWrite;
    else if (op == "read") c.ops |= roce::sim::kOpRead;
    else {
      absl::FPrintF(stderr, "rocesim: --ops: unknown operation '%s' (send, write, read)\n", op);
      return 2;
    }
  }
  c.error_rate = absl::GetFlag(FLAGS_errors);
  c.late_recv = absl::GetFlag(FLAGS_late_recv);
  c.path_mtu = absl::GetFlag(FLAGS_mtu);
  c.ack_timeout = static_cast<uint8_t>(std::min<uint32_t>(absl::GetFlag(FLAGS_ack_timeout), 31));
  c.window_psns = absl::GetFlag(FLAGS_window);
  c.repair = absl::GetFlag(FLAGS_repair);
  c.ooo_window = absl::GetFlag(FLAGS_ooo_window);
  c.max_outstanding = absl::GetFlag(FLAGS_outstanding);
  c.ipv6 = absl::GetFlag(FLAGS_ipv6);
  absl::PrintF("rocesim: seed=%d messages=%d qps=%u loss=%g reorder=%g depth=%u dup=%g corrupt=%g ce=%g "
              "max-size=%u min-size=%u ops=%s errors=%g mtu=%s window=%u repair=%d outstanding=%u %s delay=%gus rate=%gGb/s\n",
              c.seed, c.messages, c.qps, c.imp.loss,
              c.imp.reorder, c.imp.reorder_depth, c.imp.dup, c.imp.corrupt, c.imp.ce_mark, c.max_size, c.min_size,
              absl::GetFlag(FLAGS_ops).empty() ? std::string("all") : absl::GetFlag(FLAGS_ops), c.error_rate,
              c.path_mtu ? std::to_string(c.path_mtu) : std::string("random"), c.window_psns, c.repair,
              c.max_outstanding, c.ipv6 ? "ipv6" : "ipv4", absl::GetFlag(FLAGS_delay_us), c.imp.gbps);
  if (c.imp.rx_gbps > 0)
    absl::PrintF("rocesim: slow receiver: %gGb/s, buffer %gus\n", c.imp.rx_gbps, absl::GetFlag(FLAGS_rx_queue_us));
  FILE* trace = nullptr;
  if (!absl::GetFlag(FLAGS_trace).empty()) c.trace = trace = std::fopen(absl::GetFlag(FLAGS_trace).c_str(), "w");
  FILE* events = nullptr;
  if (!absl::GetFlag(FLAGS_events).empty()) {
    c.events = events = std::fopen(absl::GetFlag(FLAGS_events).c_str(), "w");
    if (events) setvbuf(events, nullptr, _IOLBF, 0);
  }
  FILE* dump = nullptr;
  if (!absl::GetFlag(FLAGS_dump_on_failure).empty())
    c.dump_on_failure = dump = std::fopen(absl::GetFlag(FLAGS_dump_on_failure).c_str(), "w");
  const auto t0 = std::chrono::steady_clock::now();
  const roce::sim::WorkloadResult r = roce::sim::RunWorkload(c);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto& q = r.qp;
  const auto& l = r.link;
  absl::PrintF("link: frames=%d bytes=%d dropped=%d (rx-overflow %d) reordered=%d duplicated=%d corrupted=%d ce-marked=%d\n",
              l.frames, l.bytes, l.dropped, l.rx_overflows,
              l.reordered, l.duplicated,
              l.corrupted, l.ce_marked);
  absl::PrintF("packets: tx=%d rx=%d retransmits=%d timeouts=%d icrc-errors=%d unknown-qp=%d\n",
              q.tx_packets, q.rx_packets,
              q.retransmits, q.timeouts,
              r.dev.IcrcErrors(), r.dev.rx_unknown_qp);
  absl::PrintF("placed as the ICRC was computed: %d (the ICRC then bad: %d)\n", r.dev.rx_placed_in_pass,
              r.dev.rx_placed_dropped);
  absl::PrintF("naks sent/received: seq=%d/%d rnr=%d/%d access=%d/%d invalid=%d/%d op=%d/%d implied=%d\n",
              q.seq_naks_sent, q.seq_naks_received,
              q.rnr_naks_sent, q.rnr_naks_received,
              q.access_naks_sent, q.access_naks_received,
              q.invalid_naks_sent, q.invalid_naks_received,
              q.op_naks_sent, q.op_naks_received,
              q.implied_naks);
  absl::PrintF("duplicates=%d read-replays=%d out-of-sequence=%d stale-responses=%d acks=%d/%d cnps=%d/%d ce=%d\n",
              q.duplicates, q.read_replays,
              q.out_of_sequence, q.dup_responses,
              q.acks_sent, q.acks_received,
              q.cnps_sent, q.cnps_received,
              q.ce_received);
  absl::PrintF("repair: repairs=%d spurious=%d go-back=%d ooo-kept=%d ooo-executed=%d read-rerequests=%d read-replays=%d\n",
               q.repairs, q.repair_spurious, q.repair_go_back, q.ooo_kept, q.ooo_executed,
               q.read_rerequests + q.implied_naks, q.read_replays);
  absl::PrintF("model: errors-injected=%d reconnects=%d binds=%d invalidates=%d late-receives=%d\n",
              r.errors_injected, r.reconnects,
              r.binds, r.invalidates,
              r.rnr_waits);
  // Loss efficiency: payload bytes sent again per byte delivered, beside the
  // ideal (resending exactly the payload the link lost or corrupted).
  const uint64_t delivered = q.tx_bytes - q.retransmit_bytes;
  const double ratio = static_cast<double>(q.retransmit_bytes) / std::max<uint64_t>(delivered, 1);
  const double ideal = static_cast<double>(l.lost_payload_bytes) / std::max<uint64_t>(delivered, 1);
  absl::PrintF("retransmitted: bytes=%d (read responses %d) delivered=%d per-delivered=%.5f ideal=%.5f (lost=%d, read responses %d) x-ideal=%s\n",
               q.retransmit_bytes, q.replay_bytes, delivered, ratio, ideal, l.lost_payload_bytes, l.lost_response_bytes,
               l.lost_payload_bytes ? absl::StrFormat("%.2f", ratio / ideal) : std::string("-"));
  absl::PrintF("time: virtual %.3f s, wall %.1f s; goodput %.1f MB/s (payload delivered per virtual second)\n",
               r.sim_time_ns / 1e9, secs, r.sim_time_ns ? delivered / (r.sim_time_ns / 1e9) / 1e6 : 0.0);
  for (const std::string& f : r.failures) absl::PrintF("FAILED: %s\n", f);
  for (const std::string& f : r.qp_failures) absl::PrintF("QP FAILED: %s\n", f);
  absl::PrintF("rocesim: %d messages, %d ok, %d failed\n", r.messages,
              r.ok, r.failed);
  if (trace) std::fclose(trace);
  if (dump) std::fclose(dump);
  if (events) std::fclose(events);
  return r.failed == 0 && r.messages > 0 ? 0 : 1;
}
