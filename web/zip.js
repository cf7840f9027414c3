// A ZIP archive (stored, not compressed) made in the browser, for "Download
// results": at most 65,535 entries and 4 GiB in all (the format's limits
// without ZIP64; the caller stays far below). Names are UTF-8.
const CRC = new Uint32Array(256).map((_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(b) {
  let c = 0xffffffff;
  for (let i = 0; i < b.length; i++) c = CRC[(c ^ b[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

// entries: [{ name, data: Uint8Array }] -> Blob (application/zip).
export function zip(entries) {
  const enc = new TextEncoder(), parts = [], central = [];
  let offset = 0;
  const header = (sig, size) => { const b = new DataView(new ArrayBuffer(size)); b.setUint32(0, sig, true); return b; };
  for (const { name, data } of entries) {
    const n = enc.encode(name), crc = crc32(data);
    const h = header(0x04034b50, 30);
    h.setUint16(4, 20, true); h.setUint16(6, 0x0800, true); h.setUint16(8, 0, true);
    h.setUint16(10, 0, true); h.setUint16(12, 0x21, true); // 1980-01-01 00:00
    h.setUint32(14, crc, true); h.setUint32(18, data.length, true); h.setUint32(22, data.length, true);
    h.setUint16(26, n.length, true); h.setUint16(28, 0, true);
    const c = header(0x02014b50, 46);
    c.setUint16(4, 20, true); c.setUint16(6, 20, true); c.setUint16(8, 0x0800, true); c.setUint16(10, 0, true);
    c.setUint16(12, 0, true); c.setUint16(14, 0x21, true);
    c.setUint32(16, crc, true); c.setUint32(20, data.length, true); c.setUint32(24, data.length, true);
    c.setUint16(28, n.length, true); c.setUint32(42, offset, true);
    parts.push(h, n, data);
    central.push(c, n);
    offset += 30 + n.length + data.length;
  }
  const size = central.reduce((a, b) => a + b.byteLength, 0);
  const end = header(0x06054b50, 22);
  end.setUint16(8, entries.length, true); end.setUint16(10, entries.length, true);
  end.setUint32(12, size, true); end.setUint32(16, offset, true);
  return new Blob([...parts, ...central, end], { type: "application/zip" });
}
