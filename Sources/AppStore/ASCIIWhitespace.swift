import Ledger

/// ASCII whitespace trimmed from both ends of a byte string, without going through Foundation.
func trimmingASCIIWhitespace<Bytes: BidirectionalCollection<UInt8>>(_ bytes: Bytes) -> Bytes.SubSequence {
    let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }
    guard let start = bytes.firstIndex(where: { !isSpace($0) }), let end = bytes.lastIndex(where: { !isSpace($0) }) else {
        return bytes[bytes.endIndex..<bytes.endIndex]
    }
    return bytes[start...end]
}
