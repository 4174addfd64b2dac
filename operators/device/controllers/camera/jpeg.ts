// Just enough JPEG to vouch for a frame before handing it out: the start and end markers, and the
// dimensions from the first start-of-frame segment.

export interface JpegInfo {
  width: number;
  height: number;
}

/** The dimensions of a complete JPEG, or undefined when `data` is not one (or is cut short). */
export function jpegInfo(data: Uint8Array): JpegInfo | undefined {
  if (data.length < 4 || data[0] !== 0xff || data[1] !== 0xd8) return undefined;
  if (data[data.length - 2] !== 0xff || data[data.length - 1] !== 0xd9) return undefined;
  let i = 2;
  while (i + 4 <= data.length) {
    if (data[i] !== 0xff) return undefined;
    const marker = data[i + 1] as number;
    if (marker === 0xff) {
      i++; // fill byte
      continue;
    }
    const length = ((data[i + 2] as number) << 8) | (data[i + 3] as number);
    // SOF0..SOF15, except DHT (C4), JPG (C8) and DAC (CC), which share the range.
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (i + 9 > data.length) return undefined;
      const height = ((data[i + 5] as number) << 8) | (data[i + 6] as number);
      const width = ((data[i + 7] as number) << 8) | (data[i + 8] as number);
      return width > 0 && height > 0 ? { width, height } : undefined;
    }
    if (marker === 0xda || length < 2) return undefined; // scan data before any frame header
    i += 2 + length;
  }
  return undefined;
}
