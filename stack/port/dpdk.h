// SPDX-License-Identifier: MIT
// The one place port/ includes DPDK. C++ code in the stack includes this
// header instead of the rte_*.h files so the extern "C" fix-up below is applied
// everywhere: generic/rte_vect.h (pulled in by rte_ethdev.h through
// rte_thash.h/rte_memcpy.h paths) declares rte_vect_get_max_simd_bitwidth
// without extern "C", which gives an undefined reference from C++.
#pragma once

extern "C" {
#include <rte_vect.h>
}

#include <rte_alarm.h>
#include <rte_bus_vdev.h>
#include <rte_cfgfile.h>
#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_flow.h>
#include <rte_interrupts.h>
#include <rte_ip.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#include <rte_telemetry.h>
#include <rte_udp.h>
