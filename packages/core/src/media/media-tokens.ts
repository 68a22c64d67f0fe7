/**
 * What an image or a document costs in the model's context, as each provider counts it.
 *
 * OpenAI (GPT-4o, GPT-4.1, o-series; "Calculating costs" in its vision guide): `low` detail is a
 * flat 85 tokens; `high` (and `auto`, counted as `high`: the model may choose it) first fits the
 * image in 2048×2048, then scales it down so its shortest side is 768 px, and costs 170 per
 * 512-px tile plus 85. Images are only ever scaled down: a 64×64 icon is one tile, 255 tokens.
 *
 * Anthropic ("Images and vision"): about `width × height / 750` after its own resize. Models
 * before Opus 4.7 resize to at most 1568 px on the long edge and about 1,600 tokens (1.23 MP, 784×1568);
 * Opus 4.7 and later, Sonnet 5 and later, Haiku 5.5 take up to 2576 px and about 3.6 MP, padded
 * to 28-px patches, `⌈w/28⌉ × ⌈h/28⌉`, at most 4,784 tokens. An unknown Claude counts as the larger.
 *
 * A model of neither family counts the larger of both, so the estimate never falls short.
 */

/** OpenAI's image detail levels. */
export type ImageDetail = 'low' | 'high' | 'auto';

/** Whose formula counts a session's media: `any` takes the largest of them. */
export type MediaFamily = 'openai' | 'anthropic' | 'anthropic-high' | 'any';

const OPENAI_BASE = 85;
const OPENAI_TILE = 170;
const OPENAI_FIT = 2048;
const OPENAI_SHORT_SIDE = 768;
const OPENAI_TILE_PX = 512;

/** OpenAI's count for an image of `width × height` px at `detail`. */
export function openaiImageTokens(width: number, height: number, detail: ImageDetail = 'auto'): number {
  if (detail === 'low') return OPENAI_BASE;
  let w = width;
  let h = height;
  if (w > OPENAI_FIT || h > OPENAI_FIT) {
    const ratio = Math.min(OPENAI_FIT / w, OPENAI_FIT / h);
    w *= ratio;
    h *= ratio;
  }
  const shortest = Math.min(w, h);
  if (shortest > OPENAI_SHORT_SIDE) {
    const ratio = OPENAI_SHORT_SIDE / shortest;
    w *= ratio;
    h *= ratio;
  }
  // Ceil, never floor: a fractional pixel past a tile edge is a tile the provider may count.
  const tiles =
    Math.ceil(Math.ceil(w - 1e-9) / OPENAI_TILE_PX) * Math.ceil(Math.ceil(h - 1e-9) / OPENAI_TILE_PX);
  return OPENAI_TILE * Math.max(1, tiles) + OPENAI_BASE;
}

/** The largest image an Anthropic model takes before resizing it: long edge and pixel area. */
interface AnthropicLimits {
  longEdge: number;
  pixels: number;
}
// The guide's table of the largest sizes that are not resized tops out at 784×1568 (~1,640 tokens).
const ANTHROPIC_STANDARD: AnthropicLimits = { longEdge: 1568, pixels: 1568 * 784 };
const ANTHROPIC_HIGH: AnthropicLimits = { longEdge: 2576, pixels: 3_605_000 };
const ANTHROPIC_HIGH_MAX_TOKENS = 4784;
const ANTHROPIC_PATCH_PX = 28;

/** The size an Anthropic model resizes `width × height` to (aspect ratio kept, never enlarged). */
function anthropicResize(width: number, height: number, limits: AnthropicLimits): [number, number] {
  const scale = Math.min(
    1,
    limits.longEdge / Math.max(width, height),
    Math.sqrt(limits.pixels / (width * height)),
  );
  return [Math.max(1, Math.floor(width * scale)), Math.max(1, Math.floor(height * scale))];
}

/** Anthropic's count, `⌈w × h / 750⌉` after the resize of models before Opus 4.7. */
export function anthropicImageTokens(width: number, height: number): number {
  const [w, h] = anthropicResize(width, height, ANTHROPIC_STANDARD);
  return Math.ceil((w * h) / 750);
}

/** Anthropic's count for Opus 4.7 and later models: 28-px patches after their larger resize. */
export function anthropicHighImageTokens(width: number, height: number): number {
  const [w, h] = anthropicResize(width, height, ANTHROPIC_HIGH);
  const patches = Math.ceil(w / ANTHROPIC_PATCH_PX) * Math.ceil(h / ANTHROPIC_PATCH_PX);
  return Math.min(ANTHROPIC_HIGH_MAX_TOKENS, Math.max(patches, Math.ceil((w * h) / 750)));
}

/** An image's tokens for a family (see {@link MediaFamily}). */
export function imageTokens(
  width: number,
  height: number,
  family: MediaFamily,
  detail: ImageDetail = 'auto',
): number {
  switch (family) {
    case 'openai':
      return openaiImageTokens(width, height, detail);
    case 'anthropic':
      return anthropicImageTokens(width, height);
    case 'anthropic-high':
      return anthropicHighImageTokens(width, height);
    case 'any':
      return Math.max(openaiImageTokens(width, height, detail), anthropicHighImageTokens(width, height));
  }
}

/** OpenAI's largest `high` count: a 768×2048 image after its resize, 2 × 4 tiles. */
const OPENAI_MAX_TILES =
  Math.ceil(OPENAI_SHORT_SIDE / OPENAI_TILE_PX) * Math.ceil(OPENAI_FIT / OPENAI_TILE_PX);

/**
 * The most one image can cost a family, whatever its size: what an image counts whose size is
 * not known (a URL never fetched). OpenAI 1,445 (`low` 85), Anthropic before Opus 4.7 1,640
 * (the 784×1568 area), later models 4,784, any family the largest of them.
 */
export function maxImageTokens(family: MediaFamily, detail: ImageDetail = 'auto'): number {
  const openai = detail === 'low' ? OPENAI_BASE : OPENAI_TILE * OPENAI_MAX_TILES + OPENAI_BASE;
  switch (family) {
    case 'openai':
      return openai;
    case 'anthropic':
      return Math.ceil(ANTHROPIC_STANDARD.pixels / 750);
    case 'anthropic-high':
      return ANTHROPIC_HIGH_MAX_TOKENS;
    case 'any':
      return Math.max(openai, ANTHROPIC_HIGH_MAX_TOKENS);
  }
}

/**
 * Tokens a page of a document costs: Anthropic bills a PDF page as its text plus an image of the
 * page, 1,500–3,000 tokens; the top of that range counts for every family.
 */
export const DOCUMENT_PAGE_TOKENS = 3000;

/**
 * The pages a document counts when its page count is not known (a PDF by URL, or one whose page
 * tree is compressed beyond reading): a stated figure, not a bound. The providers take up to 100
 * pages, and counting every unknown document at that (300,000 tokens) would leave no window
 * usable; ten pages covers the screenshots-and-short-reports an agent attaches, and a longer
 * document shows in the next usage report, which the hybrid estimate adds.
 */
export const UNKNOWN_DOCUMENT_PAGES = 10;

/** A document's tokens by its pages; {@link UNKNOWN_DOCUMENT_PAGES} when the count is not known. */
export function documentTokens(pages: number | null): number {
  return DOCUMENT_PAGE_TOKENS * Math.max(1, pages ?? UNKNOWN_DOCUMENT_PAGES);
}

/**
 * What a file part counts when its bytes are not here to measure (an `https:` URL, a provider's
 * file id): an image the family's {@link maxImageTokens} (the served context must fit by the
 * provider's count, whatever the image turns out to be), anything else a document of unknown
 * pages ({@link documentTokens}).
 */
export function unmeasuredMediaTokens(mime: string, family: MediaFamily): number {
  return mime.toLowerCase().startsWith('image/') ? maxImageTokens(family) : documentTokens(null);
}

/** Claude's older naming (`claude-3-5-sonnet`, `claude-2.1`, `claude-instant-1`): all resize like the standard tier. */
const OLD_CLAUDE_NAMING = /claude-(?:instant|[123])(?:\b|[-.])/;
/** `claude-<tier>-<major>[-<minor>]`; a minor is one digit (a dated snapshot's `-20250514` is not one). */
const CLAUDE_NAMING = /claude-(opus|sonnet|haiku)-(\d+)(?:-(\d)(?!\d))?/;
/** The first version of each tier that takes the larger images. */
const HIGH_TIER_FROM: Readonly<Record<string, number>> = { opus: 4.7, sonnet: 5, haiku: 5.5 };

/** Whether a Claude model id names one that resizes like the models before Opus 4.7. */
function isStandardClaude(id: string): boolean {
  if (OLD_CLAUDE_NAMING.test(id)) return true;
  const named = CLAUDE_NAMING.exec(id);
  if (!named) return false;
  const version = Number(named[2]) + Number(named[3] ?? 0) / 10;
  return version < HIGH_TIER_FROM[named[1]!]!;
}

/**
 * The family whose formula counts a model's media, from its id (a routed name such as
 * `anthropic/claude-sonnet-4` too) and, when known, its provider: Claude models by their
 * generation (one not recognised counts as the larger tier), GPT and o-series models OpenAI's,
 * anything else `any`.
 */
export function mediaFamilyOf(modelId: string, provider?: string | null): MediaFamily {
  const id = modelId.toLowerCase();
  const vendor = (provider ?? '').toLowerCase();
  if (id.includes('claude') || vendor === 'anthropic')
    return isStandardClaude(id) ? 'anthropic' : 'anthropic-high';
  if (/(?:^|\/)(?:gpt|chatgpt|o\d)/.test(id) || vendor === 'openai') return 'openai';
  return 'any';
}
