/**
 * An SVG line chart of context tokens over turns, one line per variant, with a marker where each
 * compaction ended and a dashed line at the usable window. Server-rendered: the report needs no
 * script and no network to show it.
 */
import { escapeHtml } from './escape';

export interface ChartSeries {
  label: string;
  color: string;
  points: { turn: number; tokens: number }[];
  /** Turns where a compaction ended, and how (summarized, failed, …). */
  markers: { turn: number; tokens: number; outcome: string; title: string }[];
}

const WIDTH = 760;
const HEIGHT = 260;
const PAD = { left: 56, right: 16, top: 16, bottom: 32 };

function niceMax(value: number): number {
  const magnitude = 10 ** Math.floor(Math.log10(Math.max(1, value)));
  const steps = [1, 2, 2.5, 5, 10];
  return magnitude * steps.find((s) => s * magnitude >= value)!;
}

export function renderChart(series: readonly ChartSeries[], usable: number, title: string): string {
  const maxTurn = Math.max(1, ...series.flatMap((s) => s.points.map((p) => p.turn)));
  const top = niceMax(Math.max(usable, ...series.flatMap((s) => s.points.map((p) => p.tokens))) * 1.05);
  const x = (turn: number) => PAD.left + (turn / maxTurn) * (WIDTH - PAD.left - PAD.right);
  const y = (tokens: number) => HEIGHT - PAD.bottom - (tokens / top) * (HEIGHT - PAD.top - PAD.bottom);
  const f = (n: number) => n.toFixed(1);
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((share) => Math.round(top * share));
  const grid = ticks
    .map(
      (t) =>
        `<line class="grid" x1="${PAD.left}" x2="${WIDTH - PAD.right}" y1="${f(y(t))}" y2="${f(y(t))}"/>` +
        `<text class="axis" x="${PAD.left - 6}" y="${f(y(t) + 4)}" text-anchor="end">${t >= 1000 ? `${Math.round(t / 1000)}k` : t}</text>`,
    )
    .join('');
  const xTicks = [0, 0.25, 0.5, 0.75, 1]
    .map((share) => Math.round(maxTurn * share))
    .map(
      (turn) => `<text class="axis" x="${f(x(turn))}" y="${HEIGHT - 10}" text-anchor="middle">${turn}</text>`,
    )
    .join('');
  const lines = series
    .map((s) => {
      const path = s.points.map((p, i) => `${i === 0 ? 'M' : 'L'}${f(x(p.turn))},${f(y(p.tokens))}`).join('');
      // One invisible point per turn carries its figures (a tooltip, and what the browser test counts).
      const points = s.points
        .map(
          (p) =>
            `<circle class="point" cx="${f(x(p.turn))}" cy="${f(y(p.tokens))}" r="2" fill="${s.color}" data-turn="${p.turn}" data-tokens="${p.tokens}"><title>${escapeHtml(`${s.label}: turn ${p.turn}, ${p.tokens.toLocaleString('en-US')} tokens`)}</title></circle>`,
        )
        .join('');
      const markers = s.markers
        .map(
          (m) =>
            `<path class="marker marker-${escapeHtml(m.outcome)}" d="M${f(x(m.turn))},${f(y(m.tokens) - 9)}l5,8h-10z" fill="${s.color}"><title>${escapeHtml(m.title)}</title></path>`,
        )
        .join('');
      return `<g class="series" data-label="${escapeHtml(s.label)}"><path class="line" d="${path}" stroke="${s.color}"/>${points}${markers}</g>`;
    })
    .join('');
  const legend = series
    .map(
      (s, i) =>
        `<text class="legend" x="${PAD.left + 8 + i * 170}" y="${PAD.top + 4}" fill="${s.color}">■ ${escapeHtml(s.label)}</text>`,
    )
    .join('');
  return [
    `<svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${escapeHtml(title)}">`,
    grid,
    `<line class="usable" x1="${PAD.left}" x2="${WIDTH - PAD.right}" y1="${f(y(usable))}" y2="${f(y(usable))}"><title>usable window: ${usable.toLocaleString('en-US')} tokens</title></line>`,
    xTicks,
    lines,
    legend,
    '</svg>',
  ].join('');
}
