// SPDX-License-Identifier: MIT
// A set of RoCEv2 frames covering every opcode of the table, IPv4 and IPv6,
// with and without 802.1Q, with payloads that exercise every pad count. Used
// by `roce-pcap write` and by the tests that feed our own output to tshark.
#pragma once

#include <cstdint>
#include <vector>

namespace roce::tools {

std::vector<std::vector<uint8_t>> SampleFrames();

}  // namespace roce::tools
