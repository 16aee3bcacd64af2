import { catalogue } from '../probes/catalogue.ts';
import { formatTable } from '../results/reporters/console.ts';

export function probesListCommand(opts: { facts: boolean; json: boolean }): number {
  if (opts.json) {
    const out = catalogue.map(({ params, ...p }) => ({ ...p, params: Object.keys(params.shape) }));
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    return 0;
  }
  const rows = catalogue.map((p) => [p.name, p.claims.join(' '), p.platforms.join(', '), p.title]);
  process.stdout.write(`${formatTable(['probe', 'claims', 'platforms', 'what it measures'], rows)}\n`);
  if (opts.facts) {
    for (const p of catalogue) {
      process.stdout.write(`\n${p.name}: ${p.description}\n`);
      for (const f of p.facts) {
        const values = f.values ? ` [${f.values.map((v) => JSON.stringify(v)).join(' | ')}]` : '';
        process.stdout.write(`  fact   ${p.name}.${f.name}${values} — ${f.description}\n`);
      }
      for (const m of p.metrics) process.stdout.write(`  metric ${p.name}.${m.name} (${m.unit}) — ${m.description}\n`);
      const params = Object.keys(p.params.shape);
      if (params.length) process.stdout.write(`  params ${params.join(', ')}\n`);
    }
  }
  return 0;
}
