#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Walks every iWARP byte stream of a capture FPDU by FPDU.

tshark's MPA dissector finds FPDUs heuristically, segment by segment. When
qemu's slirp cuts 32 KiB FPDUs (libndk on lo) into 1440-byte guest segments
it loses the FPDU boundaries in bulk transfers and leaves segments
undecoded. This reassembles each direction of each TCP connection on port
PORT from the sequence numbers (retransmissions and overlaps counted once),
skips the MPA Request or Reply, and follows the MPA length fields to the
end of the stream (docs/wire.md): every FPDU must carry DDP and RDMAP
version 1 and a defined RDMAP opcode, and the stream must end on an FPDU
boundary. Prints the opcodes per direction.

With --crc it also recomputes the MPA CRC (CRC32c, RFC 5044) of every FPDU
and prints one BAD-CRC line per FPDU whose CRC field does not match its
bytes, naming the stream, the sender, the peer's port, where the FPDU is
in the stream (the stream's last, or followed only by Sends) and what it
carries. A stream whose CRC fields are all zero
and none matches ran without CRC and is not checked. --peer-ports LO-HI
walks only the connections whose other port is in LO..HI (one test case).

    mpa-walk.py [--crc] [--peer-ports LO-HI] PCAP PORT
                                exit 0 when every stream walks cleanly
                                (and, with --crc, every CRC matches)
"""
import collections
import subprocess
import sys

OPCODES = {0: "Write", 1: "Read Request", 2: "Read Response", 3: "Send",
           4: "Send with Invalidate", 5: "Send with SE",
           6: "Send with SE and Invalidate", 7: "Terminate"}
MPA_KEYS = (b"MPA ID Req Frame", b"MPA ID Rep Frame")


def streams(pcap, port, peers=None):
    """{(stream, from_port, to_port): {seq: payload}} from tshark."""
    flt = "tcp.port == %d && tcp.len > 0" % port
    if peers:
        flt += " && tcp.port in {%d..%d}" % peers
    out = subprocess.run(
        ["tshark", "-r", pcap, "-Y", flt,
         "-T", "fields", "-e", "tcp.stream", "-e", "tcp.srcport",
         "-e", "tcp.dstport", "-e", "tcp.seq_raw", "-e", "tcp.payload"],
        check=True, capture_output=True, text=True).stdout
    segs = collections.defaultdict(dict)
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) < 5 or not f[4]:
            continue
        data = bytes.fromhex(f[4].replace(":", ""))
        segs[(int(f[0]), int(f[1]), int(f[2]))].setdefault(int(f[3]), data)
    return segs


def _crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        t.append(c)
    return t


CRC32C = _crc32c_table()


def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = CRC32C[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def only_sends(buf, fpdus):
    """True if every FPDU of the list is an untagged Send (opcodes 3-6)."""
    return all(not buf[j + 2] & 0x80 and 3 <= buf[j + 3] & 0xF <= 6
               for j, _, _, _ in fpdus)


def check_crcs(buf):
    """(FPDUs, FPDUs with a zero CRC field, [bad FPDU descriptions]) of a
    stream that walks cleanly. The CRC covers the FPDU from its length
    field through its pad, and goes on the wire little-endian as the
    4 bytes after the pad (RFC 5044 sections 6 and 7.1)."""
    i = n = zero = 0
    fpdus = []
    if buf[:16] in MPA_KEYS:
        i = 20 + int.from_bytes(buf[18:20], "big")
    while i + 4 <= len(buf):
        ulpdu = int.from_bytes(buf[i:i + 2], "big")
        body = 2 + ulpdu + (-(2 + ulpdu)) % 4
        if i + body + 4 > len(buf):
            break
        wire = int.from_bytes(buf[i + body:i + body + 4], "little")
        fpdus.append((i, ulpdu, body, wire))
        zero += wire == 0
        i += body + 4
    bad = []
    for k, (i, ulpdu, body, wire) in enumerate(fpdus):
        own = crc32c(buf[i:i + body])
        if own == wire:
            continue
        ddp, rdmap = buf[i + 2], buf[i + 3]
        what = "%s%s, %s" % (OPCODES.get(rdmap & 0xF, "opcode %d" % (rdmap & 0xF)),
                             " (last segment)" if ddp & 0x40 else "",
                             "tagged STag %s TO 0x%s" % (buf[i + 4:i + 8].hex(),
                                                         buf[i + 8:i + 16].hex())
                             if ddp & 0x80 else "untagged")
        # What the sender had queued behind it may still have left before
        # the peer's Terminate reached it: Sends place nothing, and the
        # rest of a tagged message was in the sender's socket already.
        sends_after = only_sends(buf, fpdus[k + 1:])
        # The rest of its tagged message: the same STag, each TO where the
        # last one ended, up to the last segment; then only Sends.
        rest_after = bool(ddp & 0x80) and not ddp & 0x40
        to = int.from_bytes(buf[i + 8:i + 16], "big") + ulpdu - 14
        n = k + 1
        while rest_after and n < len(fpdus):
            j, uj = fpdus[n][:2]
            rest_after = (buf[j + 2] & 0x80 and buf[j + 4:j + 8] == buf[i + 4:i + 8]
                          and int.from_bytes(buf[j + 8:j + 16], "big") == to)
            to += uj - 14
            n += 1
            if rest_after and buf[j + 2] & 0x40:
                rest_after = only_sends(buf, fpdus[n:])
                break
        bad.append("FPDU %d of %d at byte %d%s: ULPDU %d bytes, %s; CRC on the "
                   "wire %08x, over its bytes %08x" % (
                       k + 1, len(fpdus), i,
                       " (the stream's last)" if k == len(fpdus) - 1 else
                       " (followed only by Sends)" if sends_after else
                       " (followed only by the rest of its message)"
                       if rest_after else "",
                       ulpdu, what, wire, own))
    if fpdus and zero == len(fpdus) and len(bad) == len(fpdus):
        bad = None  # no CRC on this connection
    return len(fpdus), zero, bad


def assemble(segs):
    """The contiguous byte stream from the first segment, or an error."""
    buf = bytearray()
    seqs = sorted(segs)
    cur = seqs[0]
    for s in seqs:
        d = segs[s]
        if s > cur:
            return buf, "gap of %d bytes after %d" % (s - cur, len(buf))
        if s + len(d) > cur:
            buf += d[cur - s:]
            cur = s + len(d)
    return buf, None


def walk(buf):
    """(opcode counter, FPDUs, error or None)."""
    ops = collections.Counter()
    i = n = 0
    if buf[:16] in MPA_KEYS:
        if len(buf) < 20:
            return ops, 0, "short MPA frame"
        i = 20 + int.from_bytes(buf[18:20], "big")
    crc = 4  # the CRC field is there whether or not CRC is used
    while i < len(buf):
        if i + 4 > len(buf):
            return ops, n, "%d stray bytes at the end" % (len(buf) - i)
        ulpdu = int.from_bytes(buf[i:i + 2], "big")
        total = 2 + ulpdu
        total += (-total) % 4 + crc
        if i + total > len(buf):
            return ops, n, "FPDU of %d bytes cut at %d" % (total, len(buf) - i)
        ddp, rdmap = buf[i + 2], buf[i + 3]
        if ddp & 3 != 1 or rdmap >> 6 != 1 or rdmap & 0xf not in OPCODES:
            return ops, n, "bad DDP/RDMAP control %02x %02x at %d" % (
                ddp, rdmap, i)
        # Count messages, not segments: the last DDP segment of each.
        if ddp & 0x40:
            ops[OPCODES[rdmap & 0xf]] += 1
        n += 1
        i += total
    return ops, n, None


def main():
    args = sys.argv[1:]
    crc = "--crc" in args
    args = [a for a in args if a != "--crc"]
    peers = None
    if args and args[0] == "--peer-ports":
        lo, _, hi = args[1].partition("-")
        peers = (int(lo), int(hi or lo))
        args = args[2:]
    pcap, port = args[0], int(args[1])
    errors = fpdus = bad_crcs = 0
    conns = set()
    for (stream, src, dst), segs in sorted(streams(pcap, port, peers).items()):
        conns.add(stream)
        side = "target" if src == port else "host"
        buf, err = assemble(segs)
        ops, n, werr = walk(buf) if not err else ({}, 0, None)
        fpdus += n
        err = err or werr
        print("mpa-walk: stream %d from the %s: %d bytes, %d FPDUs, %s%s" % (
            stream, side, len(buf), n,
            ", ".join("%s %d" % kv for kv in sorted(ops.items())) or "-",
            "; ERROR: " + err if err else ""))
        errors += bool(err)
        if crc and not err:
            _, _, bad = check_crcs(buf)
            for b in bad or ():
                print("mpa-walk: BAD-CRC stream %d from the %s, peer port %d: %s" % (
                    stream, side, dst if src == port else src, b))
            bad_crcs += len(bad or ())
    print("mpa-walk: %d connections, %d FPDUs, %d streams with errors%s" % (
        len(conns), fpdus, errors,
        ", %d FPDUs with a bad MPA CRC" % bad_crcs if crc else ""))
    return 1 if errors or bad_crcs or not conns else 0


if __name__ == "__main__":
    sys.exit(main())
