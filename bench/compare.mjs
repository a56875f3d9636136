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
  'raw SQL b2: DELETE..SKIP LOCKED, 1 txn/task, 4 clients',
  'raw SQL b3: lock 100 + delete 100, 2 txns/100, 4 clients',
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
const cafmqMed = (re) => { const v = cafmq.filter((r) => re.test(r.mode)).map((r) => Number(r.value)); return v.length ? med(v) : NaN; };
const peerRecs = (pred) => peers.filter(pred);
const peerMed = (pred, field) => { const v = peerRecs(pred).map((r) => r[field]).filter((x) => typeof x === 'number'); return v.length ? med(v) : NaN; };
const isGW = (r) => typeof r.peer === 'string' && r.peer.startsWith('graphile-worker');
const isPgbench = (r) => r.peer === 'PostgreSQL (pgbench)';

const GW_DRAIN = (r) => isGW(r) && r.kind === 'drain' && r.conc === 24
  && r.mode === 'perfTest tuning: localQueue 500, refetchDelay 10ms, completeJobBatchDelay 0';
const B3 = (r) => isPgbench(r) && r.mode === 'batch dequeue 100 + DELETE 100 (jobs/s = 100 x batches/s)';
const B2 = (r) => isPgbench(r) && r.mode === 'dequeue+complete in 1 stmt (DELETE..SKIP LOCKED), 1 txn/job';
const GW_SEQ = (r) => isGW(r) && r.kind === 'enqueue' && r.mode === 'addJob() sequential, 1 producer';
const GW_SQL = (r) => isGW(r) && r.kind === 'enqueue' && /^SQL add_jobs\(\), \d+ in 1 call$/.test(r.mode);

const C_DRAIN = /^drain, N-th handler start$/;
const C_DRAIN_ALL = /^drain, all outcomes written$/;
const C_DRAIN_TX = /^drain, complete\(tx\) per task$/;
const C_SPAWN1 = /^spawn one at a time$/;
const C_SPAWNN = /^spawn (N|\d+) in one call$/;

// Notes when a reference was not measured cleanly (a timed-out drain would inflate the ratio).
const statusNote = (pred) => {
  const st = [...new Set(peerRecs(pred).map((r) => r.status).filter(Boolean))];
  return st.length && !(st.length === 1 && st[0] === 'done') ? `reference status: ${st.join(',')}` : '';
};

const targets = [
  { name: 'drain: cafmq (N-th handler start) / graphile-worker perfTest tuning, conc 24', goal: 1.3,
    a: cafmqMed(C_DRAIN), b: peerMed(GW_DRAIN, 'jobs_s'), note: statusNote(GW_DRAIN) },
  { name: 'drain: cafmq (N-th handler start) / pgbench b3 batch dequeue 100 + DELETE 100', goal: 0.8,
    a: cafmqMed(C_DRAIN), b: peerMed(B3, 'tps') },
  { name: 'drain: cafmq complete(tx) per task / pgbench b2 DELETE..SKIP LOCKED, 1 txn/job', goal: 0.9,
    a: cafmqMed(C_DRAIN_TX), b: peerMed(B2, 'tps') },
  { name: 'spawn: cafmq one at a time / graphile-worker addJob() sequential, 1 producer', goal: 1.2,
    a: cafmqMed(C_SPAWN1), b: peerMed(GW_SEQ, 'jobs_s') },
  { name: 'spawn: cafmq N in one call / graphile-worker SQL add_jobs(), N in 1 call', goal: 1.2,
    a: cafmqMed(C_SPAWNN), b: peerMed(GW_SQL, 'jobs_s') },
];
const limits = [
  { name: 'cafmq pickup latency p50 (ms)', max: 2, v: cafmqMed(/^pickup latency p50$/) },
  { name: 'cafmq pickup latency p99 (ms)', max: 4, v: cafmqMed(/^pickup latency p99$/) },
];
const tally = { PASS: 0, MISS: 0, 'NO DATA': 0 };
console.log('\n## Targets (medians of this run)\n');
console.log('| target | cafmq | reference | ratio / value | goal | result | note |');
console.log('|---|---|---|---|---|---|---|');
for (const t of targets) {
  const ratio = t.a / t.b;
  const res = Number.isFinite(ratio) && t.b > 0 ? (ratio >= t.goal ? 'PASS' : 'MISS') : 'NO DATA';
  tally[res]++;
  console.log(`| ${t.name} | ${fmt(t.a)} | ${fmt(t.b)} | ${Number.isFinite(ratio) ? ratio.toFixed(2) : 'n/a'} | ≥ ${t.goal} | ${res} | ${t.note || ''} |`);
}
for (const l of limits) {
  const res = Number.isFinite(l.v) ? (l.v <= l.max ? 'PASS' : 'MISS') : 'NO DATA';
  tally[res]++;
  console.log(`| ${l.name} | ${fmt(l.v, 'ms')} | | ${fmt(l.v, 'ms')} | ≤ ${l.max} ms | ${res} | |`);
}
// Context rows: no goal.
const info = [];
{
  const a = cafmqMed(C_DRAIN_ALL), b = peerMed(B3, 'tps');
  info.push(`| (context) drain: cafmq all outcomes written / pgbench b3 | ${fmt(a)} | ${fmt(b)} | ${Number.isFinite(a / b) ? (a / b).toFixed(2) : 'n/a'} | | | |`);
}
const gwLat = new Map();
for (const r of peerRecs((r) => isGW(r) && r.kind === 'latency')) {
  if (!gwLat.has(r.mode)) gwLat.set(r.mode, []);
  gwLat.get(r.mode).push(r);
}
for (const [mode, rs] of gwLat) {
  const p = (k) => fmt(med(rs.map((r) => r[k])), 'ms');
  info.push(`| (context) graphile-worker latency p50 / p99 (ms): ${mode} | | ${p('p50')} / ${p('p99')} | | | | ${rs.length} reps |`);
}
for (const line of info) console.log(line);
console.log(`\ntargets: ${tally.PASS} PASS, ${tally.MISS} MISS, ${tally['NO DATA']} NO DATA`);

// Same N on both sides? (cafmq may report the batch size in its mode string)
const gwN = [...new Set(peerRecs(GW_SQL).map((r) => r.n))];
const cN = [...new Set(cafmq.map((r) => (/^spawn (\d+) in one call$/.exec(r.mode) || [])[1]).filter(Boolean).map(Number))];
if (gwN.length && cN.length && (gwN.length > 1 || cN.length > 1 || gwN[0] !== cN[0]))
  console.log(`warning: N differs between runs (graphile-worker: ${gwN.join(',')}, cafmq: ${cN.join(',')})`);
