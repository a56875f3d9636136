// SPDX-License-Identifier: BSD-3-Clause
// Side-by-side report for bench/side_by_side.sh: reads every .jsonl file of one
// results directory and prints (a) the peers' tables (their own report.mjs),
// (b) the cafmq table (median [min–max] per mode over repetitions) and (c) the
// target ratios, computed from the medians of this same run, with PASS / MISS.
//
//   node bench/compare.mjs [RESULTS_DIR]     (default: the newest .bench/results/*)
//
// The peers' report.mjs is looked up in $PEERS_DIR (relative to the repo root),
// ../shared/bench/peers, then .bench/node (the copy side_by_side.sh makes).
// Exit code: 0 when the tables were printed (MISS is a result, not an error),
// 1 when the directory has no results.
import { readFileSync, readdirSync, writeFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function newestResults() {
  const base = join(ROOT, '.bench', 'results');
  if (!existsSync(base)) return null;
  const dirs = readdirSync(base).filter((d) => statSync(join(base, d)).isDirectory()).sort();
  return dirs.length ? join(base, dirs[dirs.length - 1]) : null;
}

const dir = process.argv[2] ? resolve(process.argv[2]) : newestResults();
if (!dir || !existsSync(dir)) {
  console.error('compare.mjs: no results directory (usage: node bench/compare.mjs [RESULTS_DIR])');
  process.exit(1);
}
const files = readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort().map((f) => join(dir, f));
const peerLines = [];
const cafmq = [];
const peers = [];
for (const f of files) {
  for (const line of readFileSync(f, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    let r;
    try { r = JSON.parse(line); } catch { console.error(`compare.mjs: skipping a malformed line in ${f}`); continue; }
    if (r.peer === 'cafmq') cafmq.push(r);
    else { peers.push(r); peerLines.push(line); }
  }
}
if (!cafmq.length && !peers.length) {
  console.error(`compare.mjs: no JSON lines in ${dir}`);
  process.exit(1);
}

const med = (a) => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const fmt = (x, unit) => (!Number.isFinite(x) ? 'n/a' : unit === 'ms' ? x.toFixed(2) : x >= 100 ? Math.round(x).toString() : x.toFixed(1));

console.log(`Results: ${dir}\n`);

// (a) the peers' tables, by their own report.mjs
console.log('## Peers (shared/bench/peers, report.mjs)\n');
const candidates = [
  process.env.PEERS_DIR && join(resolve(ROOT, process.env.PEERS_DIR), 'report.mjs'),
  join(ROOT, '..', 'shared', 'bench', 'peers', 'report.mjs'),
  join(ROOT, '.bench', 'node', 'report.mjs'),
].filter(Boolean);
const report = candidates.find((p) => existsSync(p));
if (!peerLines.length) {
  console.log('(no peer results in this directory)');
} else if (!report) {
  console.log(`(report.mjs not found; looked in: ${candidates.join(', ')})`);
} else {
  const tmp = mkdtempSync(join(tmpdir(), 'cafmq-compare-'));
  try {
    const f = join(tmp, 'peers.jsonl');
    writeFileSync(f, peerLines.join('\n') + '\n');
    const out = spawnSync(process.execPath, [report, f], { encoding: 'utf8' });
    process.stdout.write(out.stdout || '');
    if (out.status !== 0) console.log(`(report.mjs failed: ${(out.stderr || '').trim()})`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

// (b) cafmq
const ORDER = [
  'spawn one at a time', 'spawn N in one call',
  'drain, N-th handler start', 'drain, all outcomes written', 'drain, 100 tasks watched', 'drain, complete(tx) per task',
  'pickup latency p50', 'pickup latency p95', 'pickup latency p99',
  'pickup through the runtime (direct dispatch) p50', 'pickup through the runtime (direct dispatch) p99',
  'raw SQL b2: DELETE..SKIP LOCKED, 1 txn/task, 4 clients',
  'raw SQL b3: lock 100 + delete 100, 2 txns/100, 4 clients',
  'million: spawn in chunks of 10000', 'million: drain, N-th handler start', 'million: drain, all outcomes written',
  'million: RSS at 10% started', 'million: RSS at 50% started', 'million: RSS at 100% started', 'million: RSS max',
  'million: RSS growth 10%→100%',
];
const rank = (mode) => { const i = ORDER.indexOf(mode.replace(/^spawn \d+ in one call$/, 'spawn N in one call')); return i < 0 ? ORDER.length : i; };
const groups = new Map();
for (const r of cafmq) {
  const key = `${r.kind}|${r.mode}|${r.unit}`;
  if (!groups.has(key)) groups.set(key, { kind: r.kind, mode: r.mode, unit: r.unit, vs: [] });
  groups.get(key).vs.push(Number(r.value));
}
console.log('\n## cafmq (cafmq-bench)\n');
if (!groups.size) {
  console.log('(no cafmq results in this directory)');
} else {
  console.log('| kind | mode | median [min–max] | unit | reps |');
  console.log('|---|---|---|---|---|');
  for (const g of [...groups.values()].sort((a, b) => rank(a.mode) - rank(b.mode))) {
    const v = g.vs;
    console.log(`| ${g.kind} | ${g.mode} | ${fmt(med(v), g.unit)} [${fmt(Math.min(...v), g.unit)}–${fmt(Math.max(...v), g.unit)}] | ${g.unit} | ${v.length} |`);
  }
}

// (c) targets, from the medians of this run
const cafmqVals = (re) => cafmq.filter((r) => re.test(r.mode)).map((r) => Number(r.value)).filter(Number.isFinite);
const peerRecs = (pred) => peers.filter(pred);
const peerVals = (pred, field) => peerRecs(pred).map((r) => r[field]).filter((x) => typeof x === 'number' && Number.isFinite(x));
const medOf = (v) => (v.length ? med(v) : NaN);
// median [min–max] of one side's repetitions
const spread = (v, unit) => (!v.length ? 'n/a'
  : v.length === 1 ? fmt(v[0], unit)
  : `${fmt(med(v), unit)} [${fmt(Math.min(...v), unit)}–${fmt(Math.max(...v), unit)}]`);
const isGW = (r) => typeof r.peer === 'string' && r.peer.startsWith('graphile-worker');
const isPgbench = (r) => r.peer === 'PostgreSQL (pgbench)';

const GW_DRAIN = (r) => isGW(r) && r.kind === 'drain' && r.conc === 24
  && r.mode === 'perfTest tuning: localQueue 500, refetchDelay 10ms, completeJobBatchDelay 0';
const B3 = (r) => isPgbench(r) && r.mode === 'batch dequeue 100 + DELETE 100 (jobs/s = 100 x batches/s)';
const B2 = (r) => isPgbench(r) && r.mode === 'dequeue+complete in 1 stmt (DELETE..SKIP LOCKED), 1 txn/job';
// bench/complete_ref.sh: pgbench completing one claimed task per transaction with cafmq.complete.
const COMPLETE_REF = (r) => isPgbench(r)
  && r.mode === 'cafmq.complete, 1 claimed task per txn (BEGIN; SELECT cafmq.complete; COMMIT)';
const GW_SEQ = (r) => isGW(r) && r.kind === 'enqueue' && r.mode === 'addJob() sequential, 1 producer';
const GW_SQL = (r) => isGW(r) && r.kind === 'enqueue' && /^SQL add_jobs\(\), \d+ in 1 call$/.test(r.mode);
// cafmq-bench's latency part spawns one task every 10 ms (100 tasks/s); the
// peers' records of the same offered rate end in ", <samples> jobs every 10 ms".
// side_by_side.sh's supplement (every 100 ms) is a different offered rate: not compared.
const CAFMQ_LAT_SPACING_MS = 10;
const GW_LAT = (r) => isGW(r) && r.kind === 'latency'
  && new RegExp(`, \\d+ jobs every ${CAFMQ_LAT_SPACING_MS} ms$`).test(r.mode);

const C_DRAIN = /^drain, N-th handler start$/;
const C_DRAIN_ALL = /^drain, all outcomes written$/;
const C_DRAIN_TX = /^drain, complete\(tx\) per task$/;
const C_SPAWN1 = /^spawn one at a time$/;
const C_SPAWNN = /^spawn (N|\d+) in one call$/;
const C_P50 = /^pickup latency p50$/;
const C_P99 = /^pickup latency p99$/;
const C_DIRECT_P50 = /^pickup through the runtime \(direct dispatch\) p50$/;
const C_MILLION = /^million: drain, N-th handler start$/;
const C_RSS10 = /^million: RSS at 10% started$/;
const C_RSS_GROWTH = /^million: RSS growth 10%→100%$/;

// Notes when a reference was not measured cleanly (a timed-out drain would inflate the ratio).
const statusNote = (pred) => {
  const st = [...new Set(peerRecs(pred).map((r) => r.status).filter(Boolean))];
  return st.length && !(st.length === 1 && st[0] === 'done') ? `reference status: ${st.join(',')}` : '';
};

// Ratio targets: median(a) / median(b) against goal, in the direction cmp.
const targets = [
  { name: 'drain: cafmq (N-th handler start) / graphile-worker perfTest tuning, conc 24', goal: 1.3,
    a: cafmqVals(C_DRAIN), b: peerVals(GW_DRAIN, 'jobs_s'), note: statusNote(GW_DRAIN) },
  { name: 'drain: cafmq (N-th handler start) / pgbench b3 batch dequeue 100 + DELETE 100', goal: 0.8,
    a: cafmqVals(C_DRAIN), b: peerVals(B3, 'tps') },
  { name: 'drain: cafmq complete(tx) per task / pgbench b2 DELETE..SKIP LOCKED, 1 txn/job', goal: 0.9,
    a: cafmqVals(C_DRAIN_TX), b: peerVals(B2, 'tps') },
  { name: 'drain: cafmq complete(tx) per task / same-shape reference (bench/complete_ref.sh)', goal: 0.9,
    a: cafmqVals(C_DRAIN_TX), b: peerVals(COMPLETE_REF, 'tps') },
  { name: 'spawn: cafmq one at a time / graphile-worker addJob() sequential, 1 producer', goal: 1.2,
    a: cafmqVals(C_SPAWN1), b: peerVals(GW_SEQ, 'jobs_s') },
  { name: 'spawn: cafmq N in one call / graphile-worker SQL add_jobs(), N in 1 call', goal: 1.2,
    a: cafmqVals(C_SPAWNN), b: peerVals(GW_SQL, 'jobs_s') },
  { name: `pickup latency p50: cafmq / graphile-worker (ms, one spawn every ${CAFMQ_LAT_SPACING_MS} ms)`, goal: 0.8, cmp: '<=',
    unit: 'ms', a: cafmqVals(C_P50), b: peerVals(GW_LAT, 'p50'), note: statusNote(GW_LAT) },
  { name: `pickup latency p99: cafmq / graphile-worker (ms, one spawn every ${CAFMQ_LAT_SPACING_MS} ms)`, goal: 0.7, cmp: '<=',
    unit: 'ms', a: cafmqVals(C_P99), b: peerVals(GW_LAT, 'p99'), note: statusNote(GW_LAT) },
  { name: `pickup through the runtime (direct dispatch) p50: cafmq / graphile-worker pickup p50 (ms, one spawn every ${CAFMQ_LAT_SPACING_MS} ms)`, goal: 0.5, cmp: '<=',
    unit: 'ms', a: cafmqVals(C_DIRECT_P50), b: peerVals(GW_LAT, 'p50'), note: statusNote(GW_LAT) },
  { name: 'million: cafmq drain of the million (N-th handler start) / drain of N (N-th handler start)', goal: 0.9,
    a: cafmqVals(C_MILLION), b: cafmqVals(C_DRAIN) },
];
const tally = { PASS: 0, MISS: 0, 'NO DATA': 0 };
console.log('\n## Targets (medians of this run; each side median [min–max] over its repetitions)\n');
console.log('| target | cafmq | reference | ratio / value | goal | result | note |');
console.log('|---|---|---|---|---|---|---|');
for (const t of targets) {
  const cmp = t.cmp || '>=';
  const ratio = medOf(t.a) / medOf(t.b);
  const ok = Number.isFinite(ratio) && medOf(t.b) > 0;
  const res = !ok ? 'NO DATA' : (cmp === '>=' ? ratio >= t.goal : ratio <= t.goal) ? 'PASS' : 'MISS';
  tally[res]++;
  console.log(`| ${t.name} | ${spread(t.a, t.unit)} | ${spread(t.b, t.unit)} | ${ok ? ratio.toFixed(2) : 'n/a'} | ${cmp === '>=' ? '≥' : '≤'} ${t.goal} | ${res} | ${t.note || ''} |`);
}
{
  // RSS flat over the million (issue 18): the growth of the process's RSS
  // from 10 % to 100 % of the handler starts may be at most 10 % of the RSS
  // at the 10 % point or 32 MB, whichever is larger.
  const growth = cafmqVals(C_RSS_GROWTH), at10 = cafmqVals(C_RSS10);
  const limit = Math.max(0.1 * medOf(at10), 32);
  const ok = growth.length > 0 && Number.isFinite(limit);
  const res = !ok ? 'NO DATA' : medOf(growth) <= limit ? 'PASS' : 'MISS';
  tally[res]++;
  console.log(`| million: RSS growth from 10 % to 100 % of the handler starts (MB) / RSS at 10 % | ${spread(growth)} | ${spread(at10)} | ${ok ? fmt(medOf(growth)) + ' MB' : 'n/a'} | ≤ max(10 % of ${fmt(medOf(at10))}, 32) = ${fmt(limit)} MB | ${res} | |`);
}
// Context rows: no goal, not in the tally.
const info = [];
{
  const a = cafmqVals(C_DRAIN_ALL), b = peerVals(B3, 'tps');
  const r = medOf(a) / medOf(b);
  info.push(`| (context) drain: cafmq all outcomes written / pgbench b3 | ${spread(a)} | ${spread(b)} | ${Number.isFinite(r) ? r.toFixed(2) : 'n/a'} | | | |`);
}
// The former absolute latency goals, replaced by the ratios to graphile-worker above.
for (const [p, re, max] of [['p50', C_P50, 2], ['p99', C_P99, 4]]) {
  const v = cafmqVals(re);
  const m = medOf(v);
  info.push(`| (context) cafmq pickup latency ${p} (ms) | ${spread(v, 'ms')} | | ${fmt(m, 'ms')} | (formerly ≤ ${max} ms) | ${Number.isFinite(m) ? (m <= max ? '(met)' : '(not met)') : ''} | replaced by the ratio to graphile-worker |`);
}
const gwLat = new Map();
for (const r of peerRecs((r) => isGW(r) && r.kind === 'latency')) {
  if (!gwLat.has(r.mode)) gwLat.set(r.mode, []);
  gwLat.get(r.mode).push(r);
}
for (const [mode, rs] of gwLat) {
  const p = (k) => spread(rs.map((r) => r[k]).filter(Number.isFinite), 'ms');
  info.push(`| (context) graphile-worker latency p50 / p99 (ms): ${mode} | | ${p('p50')} / ${p('p99')} | | | | ${rs.length} reps |`);
}
for (const line of info) console.log(line);
console.log(`\ntargets: ${tally.PASS} PASS, ${tally.MISS} MISS, ${tally['NO DATA']} NO DATA`);

// Same N on both sides? (cafmq may report the batch size in its mode string)
const gwN = [...new Set(peerRecs(GW_SQL).map((r) => r.n))];
const cN = [...new Set(cafmq.map((r) => (/^spawn (\d+) in one call$/.exec(r.mode) || [])[1]).filter(Boolean).map(Number))];
if (gwN.length && cN.length && (gwN.length > 1 || cN.length > 1 || gwN[0] !== cN[0]))
  console.log(`warning: N differs between runs (graphile-worker: ${gwN.join(',')}, cafmq: ${cN.join(',')})`);
