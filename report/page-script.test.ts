import * as esbuild from 'esbuild';
import { describe, expect, it } from 'vitest';
import { h200Records, loaded } from '../test/report-fixture.ts';
import { renderHtml } from './html.ts';
import { bundlePage, pageScript } from './page-script.ts';

describe("behaviour.html's script", () => {
  const bundle = bundlePage(esbuild);

  it("is the TypeScript page module bundled with the console's formatting code, and nothing else", () => {
    // The same formatValue as the console and BEHAVIOUR.md (not a copy in the page's own language), and
    // the same key-metric text as BEHAVIOUR.md; nothing from node_modules or of Node's.
    expect(bundle.inputs).toEqual(expect.arrayContaining(['core/units.ts', 'report/value-text.ts', 'report/page/main.ts']));
    const elsewhere = bundle.inputs.filter((file) => !/^report\/page\/[\w-]+\.ts$/.test(file));
    expect(elsewhere).toEqual(['core/units.ts', 'report/value-text.ts']);
  });

  it('is what the page inlines, and loads nothing from outside', async () => {
    const html = renderHtml(loaded(await h200Records()), { recordsLink: 'records', recordsDirName: 'records' });
    expect(pageScript()).toBe(bundle.code);
    expect(html).toContain(`<script>${bundle.code}</script>`);
    for (const call of [
      'fetch(',
      'import(',
      'require(',
      'XMLHttpRequest',
      'WebSocket',
      'innerHTML',
      'insertAdjacentHTML',
      'document.write',
    ])
      expect(bundle.code, call).not.toContain(call);
    // One script, so that "</script" cannot end it early.
    expect(bundle.code).not.toMatch(/<\/script/i);
  });
});
