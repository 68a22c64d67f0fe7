import { describe, expect, it } from 'vitest';
import { base64Source } from './bytes';
import { inspectMedia, pdfPageCount } from './inspect';
import {
  anthropicHighImageTokens,
  anthropicImageTokens,
  documentTokens,
  imageTokens,
  maxImageTokens,
  openaiImageTokens,
  unmeasuredMediaTokens,
  DOCUMENT_PAGE_TOKENS,
  UNKNOWN_DOCUMENT_PAGES,
  type MediaFamily,
} from './media-tokens';

const FAMILIES: MediaFamily[] = ['openai', 'anthropic', 'anthropic-high', 'any'];

// Each row sits on a boundary of a formula: a tile edge, the 768-px short side, the 2048 fit, the
// 1568-px long edge and 784×1568 area, the 2576-px edge and the 4,784 cap, a 28-px patch.
describe('image tokens at each boundary (OpenAI high, Anthropic, Anthropic Opus 4.7+)', () => {
  it.each([
    // width, height, OpenAI high, Anthropic, Anthropic high
    [1, 1, 255, 1, 1],
    [28, 28, 255, 2, 2],
    [29, 28, 255, 2, 2],
    [64, 64, 255, 6, 9],
    [512, 512, 255, 350, 361],
    [513, 512, 425, 351, 361],
    [512, 513, 425, 351, 361],
    [768, 768, 765, 787, 787],
    [769, 769, 765, 789, 789],
    [1092, 1092, 765, 1590, 1590],
    [1568, 784, 1105, 1640, 1640],
    [1569, 784, 1445, 1637, 1641],
    [1568, 785, 1105, 1639, 1642],
    [768, 2048, 1445, 1230, 2098],
    [2048, 2048, 765, 1637, 4784],
    [2049, 1000, 1445, 1600, 2732],
    [2048, 4096, 1105, 1640, 4424],
    [2576, 1399, 1105, 1639, 4784],
    [2577, 1000, 1445, 1272, 3432],
    [3840, 2160, 1105, 1638, 4784],
    [16384, 1, 765, 3, 92],
    [16384, 16384, 765, 1637, 4784],
  ])('%i×%i px: %i / %i / %i', (width, height, openai, anthropic, high) => {
    expect(openaiImageTokens(width, height, 'high')).toBe(openai);
    expect(openaiImageTokens(width, height, 'auto')).toBe(openai);
    expect(openaiImageTokens(width, height, 'low')).toBe(85);
    expect(anthropicImageTokens(width, height)).toBe(anthropic);
    expect(anthropicHighImageTokens(width, height)).toBe(high);
    expect(imageTokens(width, height, 'any')).toBe(Math.max(openai, high));
  });
});

describe('maxImageTokens: what an image of unknown size counts', () => {
  it.each([
    ['openai', 'auto', 1445],
    ['openai', 'low', 85],
    ['anthropic', 'auto', 1640],
    ['anthropic-high', 'auto', 4784],
    ['any', 'auto', 4784],
    ['any', 'low', 4784],
  ] as const)('%s at %s detail: %i', (family, detail, tokens) => {
    expect(maxImageTokens(family, detail)).toBe(tokens);
  });

  it('is never exceeded by an image of any accepted size, and is reached by one', () => {
    for (const family of FAMILIES) {
      let largest = 0;
      for (let width = 1; width <= 16_384; width += width < 3000 ? 11 : 173)
        for (let height = 1; height <= 16_384; height += height < 3000 ? 17 : 191)
          largest = Math.max(largest, imageTokens(width, height, family));
      for (const [width, height] of [
        [768, 2048],
        [1568, 784],
        [3840, 2160],
      ] as const)
        largest = Math.max(largest, imageTokens(width, height, family));
      expect(largest, family).toBe(maxImageTokens(family));
    }
  });
});

describe('unmeasured media: a URL whose bytes were never fetched', () => {
  it.each(FAMILIES)('counts an image as the largest image of %s', (family) => {
    expect(unmeasuredMediaTokens('image/png', family)).toBe(maxImageTokens(family));
    // The drop-in stores an Anthropic URL image with this type: no format is known.
    expect(unmeasuredMediaTokens('image/*', family)).toBe(maxImageTokens(family));
    expect(inspectMedia({ mime: 'image/jpeg', url: 'https://example.test/shot.jpg' }, family)).toEqual({
      kind: 'reference',
      tokens: maxImageTokens(family),
    });
  });

  it('counts a document of unknown pages as the stated figure', () => {
    expect(UNKNOWN_DOCUMENT_PAGES).toBe(10);
    expect(unmeasuredMediaTokens('application/pdf', 'openai')).toBe(30_000);
    expect(unmeasuredMediaTokens('text/plain', 'anthropic')).toBe(30_000);
  });
});

describe('documents by pages', () => {
  it.each([
    [null, UNKNOWN_DOCUMENT_PAGES * DOCUMENT_PAGE_TOKENS],
    [0, DOCUMENT_PAGE_TOKENS],
    [1, 3000],
    [2, 6000],
    [100, 300_000],
  ])('%s pages: %i tokens', (pages, tokens) => {
    expect(documentTokens(pages)).toBe(tokens);
  });

  const pdf = (text: string) => base64Source(Buffer.from(text, 'latin1').toString('base64'));

  it.each([
    ['page objects', '<</Type /Pages /Kids [2 0 R 3 0 R]>> <</Type /Page>> <</Type/Page>>', 2],
    ["the page tree root's /Count", '<</Type /Pages /Kids [2 0 R] /Count 37>> <</Type /Page>>', 37],
    ['a /Count before the /Type', '<</Count 12 /Kids [2 0 R] /Type /Pages>>', 12],
    ['the largest /Count of nested page trees', '<</Type/Pages/Count 4>> <</Type/Pages/Count 40>>', 40],
    ["a linearized file's /N", '<</Linearized 1 /L 81234 /N 23 /T 80000>>', 23],
    ['nothing readable (a compressed page tree)', '<</Type /ObjStm /N 12 /First 80>> stream xyz', null],
  ])('reads %s', (_, text, pages) => {
    expect(pdfPageCount(pdf(`%PDF-1.7 ${text}`))).toBe(pages);
  });

  it('counts a PDF whose pages are not found as the unknown figure', () => {
    const url = `data:application/pdf;base64,${Buffer.from('%PDF-1.7 stream xyz').toString('base64')}`;
    expect(inspectMedia({ mime: 'application/pdf', url }, 'openai')).toMatchObject({
      kind: 'document',
      pages: null,
      tokens: 30_000,
    });
  });
});
