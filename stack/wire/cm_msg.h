// SPDX-License-Identifier: MIT
// InfiniBand Communication Management messages (IBTA vol 1 §12.6) as typed
// structs: the 232 bytes after the MAD common header, one struct per
// attribute, every field a member in host order. Parse (from the MAD data,
// bounds-checked) and Emit (exactly 232 bytes) reproduce the input bit for
// bit: reserved bits, and the vendor ID bytes of the ECE extension, are kept
// as members, so parse + emit of anything a parser accepts gives the same
// bytes back. Emit masks every field to its width.
//
// Offsets below are from the start of the MAD data (MAD byte 24); bit
// fields are listed most significant bit first, as the IBTA tables do.
// ParseCmMad / EmitCmMad handle the whole 256-byte MAD (header + message).
//
// Parsing checks structure only: the class (0x07 CM, class version 2), the
// attribute ID, and length fields that would run past their area (REJ ARI,
// SIDR_REP additional information). Whether a value is acceptable (method,
// transport type, MTU, ...) is for the connection manager to decide.
#pragma once

#include <array>
#include <cstdint>
#include <variant>

#include "stack/wire/bytes.h"
#include "stack/wire/error.h"
#include "stack/wire/headers.h"
#include "stack/wire/mad.h"

namespace roce::wire {

using Gid = std::array<uint8_t, 16>;

namespace cm {
// Attribute IDs (IBTA table 102).
inline constexpr uint16_t kAttrClassPortInfo = 0x0001;
inline constexpr uint16_t kAttrReq = 0x0010;
inline constexpr uint16_t kAttrMra = 0x0011;
inline constexpr uint16_t kAttrRej = 0x0012;
inline constexpr uint16_t kAttrRep = 0x0013;
inline constexpr uint16_t kAttrRtu = 0x0014;
inline constexpr uint16_t kAttrDreq = 0x0015;
inline constexpr uint16_t kAttrDrep = 0x0016;
inline constexpr uint16_t kAttrSidrReq = 0x0017;
inline constexpr uint16_t kAttrSidrRep = 0x0018;
inline constexpr uint16_t kAttrLap = 0x0019;
inline constexpr uint16_t kAttrApr = 0x001A;
const char* AttrName(uint16_t attr_id);  // "REQ", ..., "unknown"

// MRA "message MRAed" and REJ "message REJected" (2 bits).
inline constexpr uint8_t kMsgReq = 0;
inline constexpr uint8_t kMsgRep = 1;
inline constexpr uint8_t kMsgOther = 2;  // LAP

// REQ transport service type (2 bits).
inline constexpr uint8_t kTransportRc = 0;
inline constexpr uint8_t kTransportUc = 1;
inline constexpr uint8_t kTransportRd = 2;

// Path MTU codes (IBTA: 1 = 256 ... 5 = 4096).
inline constexpr uint8_t kMtu256 = 1;
inline constexpr uint8_t kMtu512 = 2;
inline constexpr uint8_t kMtu1024 = 3;
inline constexpr uint8_t kMtu2048 = 4;
inline constexpr uint8_t kMtu4096 = 5;
// Bytes of an MTU code, 0 for a code that is not one.
constexpr uint32_t MtuBytes(uint8_t code) { return code >= 1 && code <= 5 ? 128u << code : 0; }

// REJ reasons (IBTA table 112).
inline constexpr uint16_t kRejNoQp = 1;
inline constexpr uint16_t kRejNoEec = 2;
inline constexpr uint16_t kRejNoResources = 3;
inline constexpr uint16_t kRejTimeout = 4;
inline constexpr uint16_t kRejUnsupported = 5;
inline constexpr uint16_t kRejInvalidCommId = 6;
inline constexpr uint16_t kRejInvalidCommInstance = 7;
inline constexpr uint16_t kRejInvalidServiceId = 8;
inline constexpr uint16_t kRejInvalidTransportType = 9;
inline constexpr uint16_t kRejStaleConn = 10;
inline constexpr uint16_t kRejRdcNotExist = 11;
inline constexpr uint16_t kRejInvalidGid = 12;
inline constexpr uint16_t kRejInvalidLid = 13;
inline constexpr uint16_t kRejInvalidSl = 14;
inline constexpr uint16_t kRejInvalidTrafficClass = 15;
inline constexpr uint16_t kRejInvalidHopLimit = 16;
inline constexpr uint16_t kRejInvalidPacketRate = 17;
inline constexpr uint16_t kRejInvalidAltGid = 18;
inline constexpr uint16_t kRejInvalidAltLid = 19;
inline constexpr uint16_t kRejInvalidAltSl = 20;
inline constexpr uint16_t kRejInvalidAltTrafficClass = 21;
inline constexpr uint16_t kRejInvalidAltHopLimit = 22;
inline constexpr uint16_t kRejInvalidAltPacketRate = 23;
inline constexpr uint16_t kRejPortCmRedirect = 24;
inline constexpr uint16_t kRejPortRedirect = 25;
inline constexpr uint16_t kRejInvalidMtu = 26;
inline constexpr uint16_t kRejInsufficientRespResources = 27;
inline constexpr uint16_t kRejConsumerDefined = 28;
inline constexpr uint16_t kRejInvalidRnrRetry = 29;
inline constexpr uint16_t kRejDuplicateLocalCommId = 30;
inline constexpr uint16_t kRejInvalidClassVersion = 31;
inline constexpr uint16_t kRejInvalidFlowLabel = 32;
inline constexpr uint16_t kRejInvalidAltFlowLabel = 33;
inline constexpr uint16_t kRejVendorOptionNotSupported = 35;

// SIDR_REP status.
inline constexpr uint8_t kSidrSuccess = 0;
inline constexpr uint8_t kSidrUnsupported = 1;  // service ID not supported
inline constexpr uint8_t kSidrReject = 2;
inline constexpr uint8_t kSidrNoQp = 3;
inline constexpr uint8_t kSidrRedirect = 4;
inline constexpr uint8_t kSidrUnsupportedVersion = 5;
}  // namespace cm

// A path in a REQ (primary at data offset 52, alternate at 96): 44 bytes.
struct CmPath {
  static constexpr size_t kLen = 44;
  uint16_t local_lid = 0;         // +0   (0xFFFF from Linux over RoCE when hop limit > 1)
  uint16_t remote_lid = 0;        // +2
  Gid local_gid{};                // +4   RoCEv2: the IP address, IPv4 as ::ffff:a.b.c.d
  Gid remote_gid{};               // +20
  uint32_t flow_label = 0;        // +36  20 bits
  uint8_t resv_flow = 0;          //      6 bits, reserved
  uint8_t packet_rate = 0;        // +39  low 6 bits
  uint8_t traffic_class = 0;      // +40
  uint8_t hop_limit = 0;          // +41
  uint8_t sl = 0;                 // +42  4 bits
  bool subnet_local = false;      //      1 bit
  uint8_t resv_sl = 0;            //      3 bits, reserved
  uint8_t local_ack_timeout = 0;  // +43  5 bits
  uint8_t resv_ack = 0;           //      3 bits, reserved
  bool operator==(const CmPath&) const = default;
  void Parse(const uint8_t* in);  // kLen bytes
  void Emit(uint8_t* out) const;  // kLen bytes
};

// REQ, attribute 0x0010.
struct CmReq {
  static constexpr uint16_t kAttrId = cm::kAttrReq;
  static constexpr size_t kPrivateDataOffset = 140;
  static constexpr size_t kPrivateDataLen = 92;
  uint32_t local_comm_id = 0;               // 0
  uint8_t resv4 = 0;                        // 4
  uint32_t vendor_id = 0;                   // 5   24 bits (ECE; reserved before)
  uint64_t service_id = 0;                  // 8
  uint64_t local_ca_guid = 0;               // 16
  uint32_t resv24 = 0;                      // 24
  uint32_t local_qkey = 0;                  // 28
  uint32_t local_qpn = 0;                   // 32  24 bits
  uint8_t responder_resources = 0;          // 35
  uint32_t local_eecn = 0;                  // 36  24 bits
  uint8_t initiator_depth = 0;              // 39
  uint32_t remote_eecn = 0;                 // 40  24 bits
  uint8_t remote_cm_response_timeout = 0;   // 43  5 bits
  uint8_t transport_service_type = 0;       //     2 bits (cm::kTransport*)
  bool end_to_end_flow_control = false;     //     1 bit
  uint32_t starting_psn = 0;                // 44  24 bits
  uint8_t local_cm_response_timeout = 0;    // 47  5 bits
  uint8_t retry_count = 0;                  //     3 bits
  uint16_t pkey = 0;                        // 48
  uint8_t path_mtu = 0;                     // 50  4 bits (cm::kMtu*)
  bool rdc_exists = false;                  //     1 bit
  uint8_t rnr_retry_count = 0;              //     3 bits
  uint8_t max_cm_retries = 0;               // 51  4 bits
  bool srq = false;                         //     1 bit
  uint8_t extended_transport_type = 0;      //     3 bits
  CmPath primary;                           // 52
  CmPath alternate;                         // 96
  std::array<uint8_t, kPrivateDataLen> private_data{};  // 140
  bool operator==(const CmReq&) const = default;
  Error Parse(ByteSpan data);     // MAD data, at least 232 bytes, else kTruncated
  void Emit(uint8_t* out) const;  // 232 bytes
};

// MRA, attribute 0x0011.
struct CmMra {
  static constexpr uint16_t kAttrId = cm::kAttrMra;
  static constexpr size_t kPrivateDataOffset = 10;
  static constexpr size_t kPrivateDataLen = 222;
  uint32_t local_comm_id = 0;    // 0
  uint32_t remote_comm_id = 0;   // 4
  uint8_t message_mraed = 0;     // 8   2 bits (cm::kMsg*)
  uint8_t resv8 = 0;             //     6 bits
  uint8_t service_timeout = 0;   // 9   5 bits
  uint8_t resv9 = 0;             //     3 bits
  std::array<uint8_t, kPrivateDataLen> private_data{};  // 10
  bool operator==(const CmMra&) const = default;
  Error Parse(ByteSpan data);
  void Emit(uint8_t* out) const;
};

// REJ, attribute 0x0012.
struct CmRej {
  static constexpr uint16_t kAttrId = cm::kAttrRej;
  static constexpr size_t kAriLen = 72;
  static constexpr size_t kPrivateDataOffset = 84;
  static constexpr size_t kPrivateDataLen = 148;
  uint32_t local_comm_id = 0;        // 0
  uint32_t remote_comm_id = 0;       // 4
  uint8_t message_rejected = 0;      // 8   2 bits (cm::kMsg*)
  uint8_t resv8 = 0;                 //     6 bits
  uint8_t reject_info_length = 0;    // 9   7 bits: bytes of ARI used, at most 72 (else kBadCmMessage)
  bool resv9 = false;                //     1 bit
  uint16_t reason = 0;               // 10  (cm::kRej*)
  std::array<uint8_t, kAriLen> ari{};                    // 12 additional reject information
  std::array<uint8_t, kPrivateDataLen> private_data{};   // 84
  bool operator==(const CmRej&) const = default;
  Error Parse(ByteSpan data);
  void Emit(uint8_t* out) const;
};

// REP, attribute 0x0013.
struct CmRep {
  static constexpr uint16_t kAttrId = cm::kAttrRep;
  static constexpr size_t kPrivateDataOffset = 36;
  static constexpr size_t kPrivateDataLen = 196;
  uint32_t local_comm_id = 0;            // 0
  uint32_t remote_comm_id = 0;           // 4
  uint32_t local_qkey = 0;               // 8
  uint32_t local_qpn = 0;                // 12  24 bits
  uint32_t local_eecn = 0;               // 16  24 bits
  uint32_t starting_psn = 0;             // 20  24 bits
  // ECE vendor ID (24 bits), split over bytes 15 (high), 19 (middle) and 23
  // (low); reserved before ECE.
  uint32_t vendor_id = 0;
  uint8_t responder_resources = 0;       // 24
  uint8_t initiator_depth = 0;           // 25
  uint8_t target_ack_delay = 0;          // 26  5 bits
  uint8_t failover_accepted = 0;         //     2 bits
  bool end_to_end_flow_control = false;  //     1 bit
  uint8_t rnr_retry_count = 0;           // 27  3 bits
  bool srq = false;                      //     1 bit
  uint8_t resv27 = 0;                    //     4 bits
  uint64_t local_ca_guid = 0;            // 28
  std::array<uint8_t, kPrivateDataLen> private_data{};  // 36
  bool operator==(const CmRep&) const = default;
  Error Parse(ByteSpan data);
  void Emit(uint8_t* out) const;
};

// RTU, attribute 0x0014.
struct CmRtu {
  static constexpr uint16_t kAttrId = cm::kAttrRtu;
  static constexpr size_t kPrivateDataOffset = 8;
  static constexpr size_t kPrivateDataLen = 224;
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  std::array<uint8_t, kPrivateDataLen> private_data{};
  bool operator==(const CmRtu&) const = default;
  Error Parse(ByteSpan data);
  void Emit(uint8_t* out) const;
};

// DREQ, attribute 0x0015.
struct CmDreq {
  static constexpr uint16_t kAttrId = cm::kAttrDreq;
  static constexpr size_t kPrivateDataOffset = 12;
  static constexpr size_t kPrivateDataLen = 220;
  uint32_t local_comm_id = 0;     // 0
  uint32_t remote_comm_id = 0;    // 4
  uint32_t remote_qpn_eecn = 0;   // 8   24 bits: the receiver's QPN (Linux drops a mismatch)
  uint8_t resv11 = 0;             // 11
  std::array<uint8_t, kPrivateDataLen> private_data{};  // 12
  bool operator==(const CmDreq&) const = default;
  Error Parse(ByteSpan data);
  void Emit(uint8_t* out) const;
};

// DREP, attribute 0x0016.
struct CmDrep {
  static constexpr uint16_t kAttrId = cm::kAttrDrep;
  static constexpr size_t kPrivateDataOffset = 8;
  static constexpr size_t kPrivateDataLen = 224;
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  std::array<uint8_t, kPrivateDataLen> private_data{};
  bool operator==(const CmDrep&) const = default;
  Error Parse(ByteSpan data);
  void Emit(uint8_t* out) const;
};

// SIDR_REQ, attribute 0x0017 (parsed so that it can be refused).
struct CmSidrReq {
  static constexpr uint16_t kAttrId = cm::kAttrSidrReq;
  static constexpr size_t kPrivateDataOffset = 16;
  static constexpr size_t kPrivateDataLen = 216;
  uint32_t request_id = 0;   // 0
  uint16_t pkey = 0;         // 4
  uint16_t resv6 = 0;        // 6
  uint64_t service_id = 0;   // 8
  std::array<uint8_t, kPrivateDataLen> private_data{};  // 16
  bool operator==(const CmSidrReq&) const = default;
  Error Parse(ByteSpan data);
  void Emit(uint8_t* out) const;
};

// SIDR_REP, attribute 0x0018.
struct CmSidrRep {
  static constexpr uint16_t kAttrId = cm::kAttrSidrRep;
  static constexpr size_t kInfoLen = 72;
  static constexpr size_t kPrivateDataOffset = 96;
  static constexpr size_t kPrivateDataLen = 136;
  uint32_t request_id = 0;              // 0
  uint8_t status = 0;                   // 4  (cm::kSidr*)
  uint8_t additional_info_length = 0;   // 5  at most 72, else kBadCmMessage
  // ECE vendor ID (24 bits) in bytes 6-7 (high) and 11 (low); reserved before ECE.
  uint32_t vendor_id = 0;
  uint32_t qpn = 0;                     // 8  24 bits
  uint64_t service_id = 0;              // 12
  uint32_t qkey = 0;                    // 20
  std::array<uint8_t, kInfoLen> additional_info{};        // 24 (class port info on redirect)
  std::array<uint8_t, kPrivateDataLen> private_data{};    // 96
  bool operator==(const CmSidrRep&) const = default;
  Error Parse(ByteSpan data);
  void Emit(uint8_t* out) const;
};

using CmMessage = std::variant<CmReq, CmMra, CmRej, CmRep, CmRtu, CmDreq, CmDrep, CmSidrReq, CmSidrRep>;

// Attribute ID of whichever message `m` holds.
uint16_t AttrIdOf(const CmMessage& m);

// A whole CM MAD. EmitCmMad writes hdr as is except attr_id, which always
// comes from the message (after ParseCmMad they agree).
struct CmMad {
  MadHeader hdr;
  CmMessage msg;
  bool operator==(const CmMad&) const = default;
  template <typename T> T* As() { return std::get_if<T>(&msg); }
  template <typename T> const T* As() const { return std::get_if<T>(&msg); }
};

// A CM MAD as Linux sends one: base version 1, class 0x07, class version 2,
// method Send, status / class specific / attribute modifier 0, `tid`.
CmMad MakeCmMad(uint64_t tid, CmMessage msg);

// Parses a 256-byte MAD: kTruncated if shorter, kBadMad if longer or the base
// version is not 1, kNotCm if not class 0x07 version 2, kUnknownCmAttribute
// for an attribute other than REQ..SIDR_REP, kBadCmMessage for a length field
// past its area. The method and status are not checked.
Error ParseCmMad(ByteSpan mad, CmMad* out);

// Writes the 256-byte MAD.
void EmitCmMad(const CmMad& m, uint8_t* out);
std::array<uint8_t, mad::kLen> SerializeCmMad(const CmMad& m);

}  // namespace roce::wire
