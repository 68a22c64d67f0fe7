import { describe, expect, it } from 'vitest';
import { base64Source, bytesSource } from './bytes';
import { readImageHeader } from './dimensions';
import {
  anthropicHighImageTokens,
  anthropicImageTokens,
  imageTokens,
  mediaFamilyOf,
  openaiImageTokens,
} from './media-tokens';
import { inspectMedia, MediaRejected } from './inspect';
import { pngHeader, jpegHeader, gifHeader, webpHeader, dataUrl } from './test-images';

describe('OpenAI image tokens (vision guide, "Calculating costs")', () => {
  it.each([
    // The guide's own examples.
    [1024, 1024, 'high', 765],
    [2048, 4096, 'high', 1105],
    [4096, 8192, 'low', 85],
    // Scaled down only: a 64×64 icon is one tile.
    [64, 64, 'high', 255],
    [64, 64, 'auto', 255],
    [512, 512, 'high', 255],
    [513, 512, 'high', 425],
    // A 4K screenshot: 2048×1152, then 1366×768, 3×2 tiles.
    [3840, 2160, 'high', 1105],
    [3840, 2160, 'low', 85],
    [2048, 768, 'high', 1445],
  ] as const)('%i×%i at %s detail: %i', (w, h, detail, tokens) => {
    expect(openaiImageTokens(w, h, detail)).toBe(tokens);
  });
});

describe('Anthropic image tokens ("Images and vision": w×h/750 after its resize)', () => {
  it.each([
    // The guide's table.
    [200, 200, 54],
    [1000, 1000, 1334],
    [1092, 1092, 1590],
    [64, 64, 6],
    // Larger images are resized to ≤1568 px long edge and the area of the table's 784×1568.
    [3840, 2160, 1638],
    [1568, 784, 1640],
    [784, 1568, 1640],
    [1568, 1568, 1637],
  ])('%i×%i: %i', (w, h, tokens) => {
    expect(anthropicImageTokens(w, h)).toBe(tokens);
  });

  it.each([
    // 28-px patches (35×20 and 36×36), up to 4,784 tokens and 2576 px.
    [960, 540, 700],
    [1000, 1000, 1334],
    [3840, 2160, 4784],
  ])('Opus 4.7 and later: %i×%i: %i', (w, h, tokens) => {
    expect(anthropicHighImageTokens(w, h)).toBe(tokens);
  });

  it('counts the larger of the families for a model of neither', () => {
    expect(imageTokens(3840, 2160, 'any')).toBe(4784);
    expect(imageTokens(64, 64, 'any')).toBe(255);
  });
});

describe('mediaFamilyOf', () => {
  it.each([
    ['gpt-4o', 'openai'],
    ['gpt-4.1-mini', 'openai'],
    ['o3', 'openai'],
    ['openai/gpt-5', 'openai'],
    ['claude-3-5-sonnet-20241022', 'anthropic'],
    ['claude-sonnet-4-20250514', 'anthropic'],
    ['claude-sonnet-4-5', 'anthropic'],
    ['claude-opus-4-6', 'anthropic'],
    ['anthropic/claude-haiku-4-5', 'anthropic'],
    ['claude-opus-4-7', 'anthropic-high'],
    ['claude-sonnet-5-5', 'anthropic-high'],
    ['claude-next', 'anthropic-high'],
    ['llama-3.1-70b', 'any'],
  ] as const)('%s → %s', (model, family) => {
    expect(mediaFamilyOf(model)).toBe(family);
  });
});

describe('readImageHeader', () => {
  it.each([
    ['png', pngHeader(1920, 1080)],
    ['jpeg', jpegHeader(1920, 1080)],
    ['gif', gifHeader(1920, 1080)],
    ['webp', webpHeader(1920, 1080, 'VP8 ')],
    ['webp', webpHeader(1920, 1080, 'VP8L')],
    ['webp', webpHeader(1920, 1080, 'VP8X')],
  ] as const)('reads a %s header', (format, bytes) => {
    expect(readImageHeader(bytesSource(bytes))).toEqual({ format, width: 1920, height: 1080 });
  });

  it('reads through base64 a window at a time', () => {
    const bytes = jpegHeader(800, 600, 5000);
    const b64 = Buffer.from(bytes).toString('base64');
    expect(readImageHeader(base64Source(b64))).toEqual({ format: 'jpeg', width: 800, height: 600 });
    expect(base64Source(b64).read(7, 5)).toEqual(bytes.subarray(7, 12));
  });

  it.each([
    ['nothing', new Uint8Array(0)],
    ['a truncated PNG', pngHeader(10, 10).subarray(0, 20)],
    ['a JPEG with no frame header', new Uint8Array([0xff, 0xd8, 0xff, 0xda, 0, 4, 0, 0])],
    ['text', new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"><script/></svg>')],
  ])('gives null for %s', (_, bytes) => {
    expect(readImageHeader(bytesSource(bytes))).toBeNull();
  });
});

describe('inspectMedia', () => {
  it('measures an image data URL by its header, for the family', () => {
    const url = dataUrl('image/png', pngHeader(3840, 2160));
    expect(inspectMedia({ mime: 'image/png', url }, 'openai')).toMatchObject({
      kind: 'image',
      width: 3840,
      height: 2160,
      tokens: 1105,
    });
    expect(inspectMedia({ mime: 'image/png', url }, 'anthropic').kind === 'image').toBe(true);
  });

  it('takes the type the header shows over the one the URL claims', () => {
    const url = dataUrl('image/png', jpegHeader(100, 100));
    expect(inspectMedia({ mime: 'image/png', url }, 'openai')).toMatchObject({ mime: 'image/jpeg' });
  });

  it('leaves a URL that is not data: as a reference', () => {
    expect(inspectMedia({ mime: 'image/png', url: 'https://example.test/a.png' }, 'openai')).toEqual({
      kind: 'reference',
      tokens: 1445,
    });
  });

  it('counts a PDF by its pages', () => {
    const pdf = new TextEncoder().encode(
      '%PDF-1.4 1 0 obj <</Type /Pages>> 2 0 obj <</Type /Page>> 3 0 obj <</Type/Page>>',
    );
    expect(
      inspectMedia({ mime: 'application/pdf', url: dataUrl('application/pdf', pdf) }, 'any'),
    ).toMatchObject({
      kind: 'document',
      pages: 2,
      tokens: 6000,
    });
  });

  it.each([
    [
      'a header claiming 100,000×100,000 px',
      dataUrl('image/png', pngHeader(100_000, 100_000)),
      /100000×100000/,
    ],
    ['an empty image', dataUrl('image/gif', gifHeader(0, 10)), /empty/],
    [
      'bytes that are no image',
      dataUrl('image/png', new TextEncoder().encode('hello world!')),
      /not a readable/,
    ],
    ['broken base64', 'data:image/png;base64,iVBOR*w0K', /well-formed/],
    [
      'a data URL of more than 20 MiB',
      `data:image/png;base64,${'A'.repeat(28_000_000)}`,
      /more than 20971520 bytes/,
    ],
    [
      'SVG',
      dataUrl('image/svg+xml', new TextEncoder().encode('<svg><script>alert(1)</script></svg>')),
      /SVG/,
    ],
    ['an unlisted type', dataUrl('application/x-msdownload', new Uint8Array(4)), /not accepted/],
    ['a percent-encoded image', 'data:image/png,%89PNG', /base64/],
  ])('refuses %s', (_, url, message) => {
    expect(() => inspectMedia({ mime: 'image/png', url }, 'openai')).toThrow(MediaRejected);
    expect(() => inspectMedia({ mime: 'image/png', url }, 'openai')).toThrow(message);
  });
});
