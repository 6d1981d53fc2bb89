// A VP8 keyframe's picture size from the first RTP packet of the frame (RFC 7741's payload
// descriptor, then RFC 6386's key frame header): what the werift node reports of a stream's
// video, and what the WebRTC clients count keyframes by. Pure: bytes in, a size or null out.

/** The width and height of the keyframe this packet starts, or null when it starts none. */
export function vp8Keyframe(p: Buffer): { width: number; height: number } | null {
  if (p.length < 1) return null;
  let i = 1;
  if (p[0]! & 0x80) {
    const x = p[1] ?? 0;
    i = 2;
    if (x & 0x80) i += (p[i] ?? 0) & 0x80 ? 2 : 1;
    if (x & 0x40) i++;
    if (x & 0x30) i++;
  }
  // The start of partition 0 (S=1, PID=0), the P bit 0, then the start code 9d 01 2a.
  if ((p[0]! & 0x17) !== 0x10 || p.length < i + 10) return null;
  if ((p[i]! & 0x01) !== 0 || p[i + 3] !== 0x9d || p[i + 4] !== 0x01 || p[i + 5] !== 0x2a) return null;
  return { width: p.readUInt16LE(i + 6) & 0x3fff, height: p.readUInt16LE(i + 8) & 0x3fff };
}
