/**
 * report.html in a real headless browser: it renders, and its chart has data points. Chromium is
 * Debian's package (scripts/ensure-test-tools.sh, run by .ci/run, installs it; CHROMIUM_PATH points elsewhere); a
 * missing browser fails the test with that advice instead of skipping it.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { sampleReport } from '../test-support/report-fixture';
import { renderHtml } from './html';

const CANDIDATES = [
  process.env.CHROMIUM_PATH,
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome',
];

function chromiumPath(): string {
  const found = CANDIDATES.find((path): path is string => !!path && existsSync(path));
  if (!found) {
    throw new Error(
      "no headless browser for the report.html test: install Debian's chromium (`apt-get install -y chromium`, " +
        'or run `bash scripts/ensure-test-tools.sh` as root) or set CHROMIUM_PATH',
    );
  }
  return found;
}

describe('report.html in a headless browser', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('renders without errors or requests, and its chart has data points', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'replay-html-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'report.html');
    writeFileSync(file, renderHtml(sampleReport()));
    const page = await browser.newPage();
    const errors: string[] = [];
    const requests: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message) => message.type() === 'error' && errors.push(message.text()));
    page.on('request', (request) => requests.push(request.url()));
    await page.goto(pathToFileURL(file).href);

    expect(errors).toEqual([]);
    expect(requests.filter((url) => !url.startsWith('file:'))).toEqual([]);
    expect(await page.title()).toBe('Compactor replay: 2 runs');
    const chart = page.locator('svg.chart').first();
    const box = await chart.boundingBox();
    expect(box!.width).toBeGreaterThan(300);
    expect(box!.height).toBeGreaterThan(100);
    // Every point is laid out inside the chart, at the turn and token count it stands for.
    const points = await page.$$eval('svg.chart circle.point', (circles) =>
      circles.map((c) => ({
        turn: Number(c.getAttribute('data-turn')),
        tokens: Number(c.getAttribute('data-tokens')),
        r: (c as unknown as { getBBox(): { width: number } }).getBBox().width,
      })),
    );
    expect(points).toHaveLength(24);
    expect(points.every((p) => p.turn >= 1 && p.tokens > 0 && p.r > 0)).toBe(true);
    expect(await page.locator('svg.chart .marker').count()).toBe(3);
    expect(await page.locator('table.retention span.lost').count()).toBeGreaterThan(0);
    await page.close();
  });
});
