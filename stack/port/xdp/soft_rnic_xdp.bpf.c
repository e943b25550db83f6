// SPDX-License-Identifier: MIT OR GPL-2.0
//
// soft_rnic_xdp: the XDP program the net_af_xdp PMD loads (devarg
// xdp_prog=<this .o>) on an interface the soft-RNIC shares with the kernel.
// It owns the split of the interface's traffic: only RoCEv2 — IPv4/IPv6 UDP
// datagrams to destination port 4791 addressed to one of the adapter's
// addresses (srnic_addrs) — goes to the queue's AF_XDP socket (xsks_map, key =
// RX queue index, filled by the PMD); everything else (ARP, ICMP, TCP, other
// UDP, IPv4 fragments, IPv6 with extension headers, other destinations,
// truncated frames) is XDP_PASS to the kernel. The redirect falls back to
// XDP_PASS when the queue has no socket (the process died: the kernel removes
// the socket from xsks_map when it is released), so the host's network is
// never black-holed. At most one 802.1Q / 802.1ad tag is looked through.
//
// Userspace (stack/port/xdp_filter.cc) fills srnic_addrs and srnic_owner and
// reads srnic_stats; the map names and layouts below are its contract.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define SRNIC_ROCE_PORT 4791

// AF_XDP sockets by RX queue index (the PMD inserts each queue's socket fd).
struct {
  __uint(type, BPF_MAP_TYPE_XSKMAP);
  __uint(max_entries, 64);
  __type(key, __u32);
  __type(value, __u32);
} xsks_map SEC(".maps");

// The adapter's addresses: IPv6 as is, IPv4 IPv4-mapped (::ffff:a.b.c.d).
struct srnic_addr {
  __u8 b[16];
};
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 256);
  __type(key, struct srnic_addr);
  __type(value, __u8);
} srnic_addrs SEC(".maps");

// The process that owns the adapter (pid + start time in clock ticks since
// boot, field 22 of /proc/<pid>/stat), written by userspace: lets the next
// process tell a program left by a killed one from one in use.
struct srnic_owner_rec {
  __u32 pid;
  __u32 pad;
  __u64 start_time;
};
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct srnic_owner_rec);
} srnic_owner SEC(".maps");

enum {
  SRNIC_TO_XSK = 0,          // redirect attempted
  SRNIC_PASS_NOT_ROCE = 1,   // not IP / not UDP 4791
  SRNIC_PASS_NOT_LOCAL = 2,  // UDP 4791 to an address not in srnic_addrs
  SRNIC_PASS_MALFORMED = 3,  // truncated / IPv4 fragment / IPv6 extension header
  SRNIC_NSTATS = 4,
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, SRNIC_NSTATS);
  __type(key, __u32);
  __type(value, __u64);
} srnic_stats SEC(".maps");

static __always_inline int count(__u32 idx, int verdict) {
  __u64* v = bpf_map_lookup_elem(&srnic_stats, &idx);
  if (v) *v += 1;  // per-CPU: no atomic needed
  return verdict;
}

static __always_inline int is_ipv6_ext_header(__u8 nh) {
  switch (nh) {
    case 0:    // hop-by-hop options
    case 43:   // routing
    case 44:   // fragment
    case 50:   // ESP
    case 51:   // AH
    case 60:   // destination options
    case 135:  // mobility
    case 139:  // HIP
    case 140:  // shim6
      return 1;
    default:
      return 0;
  }
}

// Common tail: UDP header at `udp`, IP payload (UDP datagram) of
// `ip_payload_len` bytes per the IP header, destination address `key`.
static __always_inline int roce_verdict(struct xdp_md* ctx, void* data_end, struct udphdr* udp,
                                        __u32 ip_payload_len, struct srnic_addr* key) {
  if ((void*)(udp + 1) > data_end) return count(SRNIC_PASS_MALFORMED, XDP_PASS);
  if (udp->dest != bpf_htons(SRNIC_ROCE_PORT)) return count(SRNIC_PASS_NOT_ROCE, XDP_PASS);
  // The whole datagram must be in the frame (padding after it is fine).
  if (ip_payload_len < sizeof(*udp) || bpf_ntohs(udp->len) < sizeof(*udp) ||
      bpf_ntohs(udp->len) > ip_payload_len ||
      (void*)((char*)udp + ip_payload_len) > data_end)
    return count(SRNIC_PASS_MALFORMED, XDP_PASS);
  if (!bpf_map_lookup_elem(&srnic_addrs, key)) return count(SRNIC_PASS_NOT_LOCAL, XDP_PASS);
  // Referenced so the kernel binds srnic_owner to the program (userspace
  // finds it among the program's map ids); an ARRAY entry always exists.
  __u32 zero = 0;
  if (!bpf_map_lookup_elem(&srnic_owner, &zero)) return count(SRNIC_PASS_NOT_LOCAL, XDP_PASS);
  count(SRNIC_TO_XSK, 0);
  // No socket on this queue (owner gone): XDP_PASS, the kernel gets it.
  return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

SEC("xdp")
int soft_rnic_xdp(struct xdp_md* ctx) {
  void* data = (void*)(long)ctx->data;
  void* data_end = (void*)(long)ctx->data_end;

  struct ethhdr* eth = data;
  if ((void*)(eth + 1) > data_end) return count(SRNIC_PASS_MALFORMED, XDP_PASS);
  __u16 proto = eth->h_proto;
  void* l3 = eth + 1;
  if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
    // One tag: TCI (2 bytes) then the inner ethertype (2 bytes).
    __be16* tag = l3;
    if ((void*)(tag + 2) > data_end) return count(SRNIC_PASS_MALFORMED, XDP_PASS);
    proto = tag[1];
    l3 = tag + 2;
  }

  struct srnic_addr key = {};
  if (proto == bpf_htons(ETH_P_IP)) {
    struct iphdr* ip = l3;
    if ((void*)(ip + 1) > data_end) return count(SRNIC_PASS_MALFORMED, XDP_PASS);
    if (ip->version != 4 || ip->ihl < 5) return count(SRNIC_PASS_MALFORMED, XDP_PASS);
    if (ip->protocol != IPPROTO_UDP) return count(SRNIC_PASS_NOT_ROCE, XDP_PASS);
    // MF set or a fragment offset: the kernel reassembles.
    if (ip->frag_off & bpf_htons(0x3FFF)) return count(SRNIC_PASS_MALFORMED, XDP_PASS);
    __u32 hlen = (__u32)ip->ihl * 4;  // 20..60
    __u32 tot = bpf_ntohs(ip->tot_len);
    if (tot < hlen) return count(SRNIC_PASS_MALFORMED, XDP_PASS);
    struct udphdr* udp = (void*)((char*)ip + hlen);
    key.b[10] = 0xff;
    key.b[11] = 0xff;
    __builtin_memcpy(&key.b[12], &ip->daddr, 4);
    return roce_verdict(ctx, data_end, udp, tot - hlen, &key);
  }
  if (proto == bpf_htons(ETH_P_IPV6)) {
    struct ipv6hdr* ip6 = l3;
    if ((void*)(ip6 + 1) > data_end) return count(SRNIC_PASS_MALFORMED, XDP_PASS);
    if (ip6->version != 6) return count(SRNIC_PASS_MALFORMED, XDP_PASS);
    if (ip6->nexthdr != IPPROTO_UDP) {
      if (is_ipv6_ext_header(ip6->nexthdr)) return count(SRNIC_PASS_MALFORMED, XDP_PASS);
      return count(SRNIC_PASS_NOT_ROCE, XDP_PASS);
    }
    __builtin_memcpy(key.b, &ip6->daddr, 16);
    // An IPv4-mapped destination in an IPv6 header (never valid on the wire)
    // must not match an IPv4 address's key.
    if (ip6->daddr.in6_u.u6_addr32[0] == 0 && ip6->daddr.in6_u.u6_addr32[1] == 0 &&
        ip6->daddr.in6_u.u6_addr32[2] == bpf_htonl(0x0000ffff))
      return count(SRNIC_PASS_NOT_LOCAL, XDP_PASS);
    return roce_verdict(ctx, data_end, (struct udphdr*)(ip6 + 1), bpf_ntohs(ip6->payload_len),
                        &key);
  }
  return count(SRNIC_PASS_NOT_ROCE, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
