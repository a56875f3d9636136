// SPDX-License-Identifier: BSD-3-Clause
// graphile-worker under cafmq-bench's held_snapshot load (bench/held_snapshot.cpp):
// RATE jobs/s spawned with SQL add_jobs() in batches every 10 ms for SECONDS, drained
// by one worker; with HOLD=1 another session holds a REPEATABLE READ snapshot from a
// quarter to three quarters of the run. Per 30 s window: handler starts per second,
// pickup p99 (add_jobs call to handler start) of the jobs that started in it, and
// graphile_worker._private_jobs with its indexes in MB and its dead rows.
// MODE=tuned (the perfTest tuning that bench/side_by_side.sh compares the drain with)
// or defaults. Run by bench/held_snapshot_gw.sh from .bench/node.
import pg from 'pg';
import { run, runMigrations, Logger } from 'graphile-worker';
import { performance } from 'node:perf_hooks';

const PGURL = process.env.PGURL;
const RATE = parseInt(process.env.RATE || '2000', 10);
const SECONDS = parseInt(process.env.SECONDS || '600', 10);
const HOLD = process.env.HOLD !== '0';
const MODE = process.env.MODE || 'tuned';
const WINDOW_MS = 30000;
const now = () => performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const quiet = new Logger(() => (level, message) => { if (level === 'error') console.error('[gw]', message); });

const perBatch = Math.max(1, Math.floor(RATE / 100));
const batches = Math.floor(SECONDS * 100);
const total = perBatch * batches;
const spawned = new Float64Array(total).fill(-1);
const started = new Float64Array(total).fill(-1);
let runs = 0;

async function main() {
  const admin = new pg.Client({ connectionString: PGURL });
  await admin.connect();
  await admin.query('drop schema if exists graphile_worker cascade');
  await runMigrations({ connectionString: PGURL, logger: quiet });
  const opts = MODE === 'tuned'
    ? { concurrency: 24, maxPoolSize: 25, preset: { worker: { localQueue: { size: 500, refetchDelay: { durationMs: 10 } }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } } }
    : { concurrency: 24, maxPoolSize: 25 };
  const t0 = now();
  const runner = await run({
    connectionString: PGURL, noHandleSignals: true, logger: quiet,
    taskList: { noop: async (p) => {
      const i = p.i;
      if (started[i] >= 0) throw new Error(`job ${i} ran twice`);
      started[i] = now() - t0; ++runs;
    } },
    ...opts,
  });
  // The holder: a quarter to three quarters of the run.
  const holder = HOLD ? (async () => {
    await sleep(SECONDS * 250 - (now() - t0));
    const c = new pg.Client({ connectionString: PGURL });
    await c.connect();
    await c.query('begin isolation level repeatable read');
    await c.query('select count(*) from graphile_worker._private_jobs');
    await sleep(SECONDS * 750 - (now() - t0));
    await c.query('commit');
    await c.end();
  })() : Promise.resolve();
  // The load.
  const spawner = (async () => {
    const c = new pg.Client({ connectionString: PGURL });
    await c.connect();
    for (let b = 0; b < batches; ++b) {
      const wait = b * 10 - (now() - t0);
      if (wait > 0) await sleep(wait);
      const first = b * perBatch;
      const at = now() - t0;
      for (let k = 0; k < perBatch; ++k) spawned[first + k] = at;
      await c.query(`select count(*) from graphile_worker.add_jobs(
         (select array_agg(row('noop', json_build_object('i', i), null, null, null, null, null, null)::graphile_worker.job_spec)
            from generate_series($1::int, $2::int) i))`, [first, first + perBatch - 1]);
    }
    await c.end();
  })();
  // The table at each window's end.
  const windows = [];
  for (let end = WINDOW_MS; end <= SECONDS * 1000; end += WINDOW_MS) {
    await sleep(end - (now() - t0));
    const { rows } = await admin.query(`select pg_total_relation_size('graphile_worker._private_jobs') b,
      (select n_dead_tup from pg_stat_user_tables where relid = 'graphile_worker._private_jobs'::regclass) d`);
    windows.push({ end, held: HOLD && end - WINDOW_MS >= SECONDS * 250 && end <= SECONDS * 750,
      mb: Number(rows[0].b) / 1048576, dead: Number(rows[0].d) });
  }
  await spawner; await holder;
  for (let i = 0; i < 12000 && runs < total; ++i) await sleep(10);
  await runner.stop();
  await admin.end();
  if (runs !== total) throw new Error(`${runs} of ${total} jobs ran`);
  const pickups = windows.map(() => []);
  for (let i = 0; i < total; ++i) {
    const k = Math.floor(started[i] / WINDOW_MS);
    if (k < pickups.length) pickups[k].push(started[i] - spawned[i]);
  }
  console.log(`graphile-worker (${MODE}) ${HOLD ? 'held snapshot' : 'held baseline'}: window end (s), held, jobs/s, p99 ms, table MB, dead rows`);
  windows.forEach((w, k) => {
    const xs = pickups[k].sort((a, b) => a - b);
    const p99 = xs.length ? xs[Math.min(xs.length - 1, Math.round(0.99 * (xs.length - 1)))] : NaN;
    console.log(`  ${(w.end / 1000).toFixed(1)}  ${w.held ? 'held' : '-   '}  ${(xs.length / (WINDOW_MS / 1000)).toFixed(1)}  ${p99.toFixed(2)}  ${w.mb.toFixed(1)}  ${w.dead}`);
  });
}

main().then(() => process.exit(0)).catch((e) => { console.error(e); process.exit(1); });
