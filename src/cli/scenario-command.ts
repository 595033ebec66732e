/**
 * `isocheck scenario FILE.spec...`: run PostgreSQL isolation-tester specs, record each permutation's history and
 * check it (src/scenario/run.ts). Prints one result per permutation (human or --json) and a total.
 *
 * Exit status, as `isocheck check`: 0 all consistent, 1 some inconsistent, 2 bad input or some permutation not
 * recordable (or the database went away), 3 some unknown (and none inconsistent or bad); 130/143 when interrupted
 * (SIGINT/SIGTERM), after one line saying what was recorded (src/cli/interrupt.ts).
 */
import { renderResult } from '../checker/explain/explain.js';
import { runScenarios, type PermutationResult, type ScenarioOptions } from '../scenario/run.js';
import { EXIT } from './check-command.js';
import { InterruptedError, watchSignals } from './interrupt.js';
import { anomalyJson } from '../report/json.js';

export interface ScenarioCommandOptions {
  db?: string;
  iso?: string;
  json?: boolean;
  timeout?: number;
  out?: string;
  permutation?: number;
  verbose?: boolean;
  /** replica or shards: the specs run on a cluster isocheck builds (src/scenario/cluster.ts). */
  topology?: string;
  standbys?: number;
  shards?: number;
}

export function scenarioJsonOf(r: PermutationResult): Record<string, unknown> {
  const res = r.result;
  return {
    spec: r.spec,
    permutation: r.permutation,
    steps: r.steps,
    ...(r.file ? { file: r.file } : {}),
    verdict: r.verdict,
    ...(r.error ? { error: r.error } : {}),
    ...(r.refusedStep ? { refusedStep: r.refusedStep } : {}),
    ...(res?.reason ? { reason: res.reason } : {}),
    anomalies: (res?.anomalies ?? []).map(anomalyJson),
    ...(res?.commitOrder ? { commitOrder: res.commitOrder } : {}),
    ...(res?.subHistory ? { subHistory: res.subHistory } : {}),
    ...(res ? { notes: res.notes, stats: res.stats } : {}),
    errors: r.errors,
    ...(r.warnings.length > 0 ? { warnings: r.warnings } : {}),
  };
}

export function scenarioExitCode(results: PermutationResult[]): number {
  if (results.some((r) => r.verdict === 'error')) return EXIT.error;
  if (results.some((r) => r.verdict === 'inconsistent')) return EXIT.inconsistent;
  if (results.some((r) => r.verdict === 'unknown')) return EXIT.unknown;
  return EXIT.consistent;
}

/**
 * The human report of one permutation. `sameErrorAs`: an earlier permutation of the spec that failed with the same
 * message (a refusal repeats for every permutation holding the step), which is then referred to, not repeated.
 */
export function renderPermutation(r: PermutationResult, verbose = false, sameErrorAs?: number): string {
  const head = `${r.spec} permutation ${r.permutation} [${r.steps.join(' ')}]`;
  const lines: string[] = [];
  if (r.verdict === 'error') {
    lines.push(`${head}: ERROR`);
    if (sameErrorAs !== undefined)
      lines.push(
        `  ${r.refusedStep ? `not recordable (step ${r.refusedStep})` : 'not recordable'}: as ` +
          `permutation ${sameErrorAs} above`,
      );
    else lines.push(`  ${r.error!.split('\n').join('\n  ')}`);
  } else {
    const res = r.result!;
    const s = res.stats;
    lines.push(
      `${head}: ${res.verdict.toUpperCase()} (${s.committed} committed, ${s.aborted} ` +
        `aborted; ${(s.timeMs / 1000).toFixed(2)} s)`,
    );
    if (res.verdict !== 'consistent') {
      // the check's explanation, without its first line (the file and verdict are in ours)
      const explained = renderResult(r.file!, res).split('\n').slice(1);
      lines.push(`  history: ${r.file}`);
      lines.push(...explained);
    }
  }
  if (verbose) for (const t of r.transcript) lines.push(`  | ${t}`);
  else for (const e of r.errors) lines.push(`  step ${e.step}: ERROR: ${e.message}`);
  for (const w of r.warnings) lines.push(`  warning: ${w}`);
  return lines.join('\n');
}

export async function runScenarioCommand(files: string[], options: ScenarioCommandOptions): Promise<number> {
  const firstWithError = new Map<string, number>();
  const scenarioOptions: ScenarioOptions = {
    db: options.db,
    iso: options.iso,
    timeout: options.timeout,
    out: options.out,
    permutation: options.permutation,
    topology: options.topology,
    standbys: options.standbys,
    shards: options.shards,
    onResult: options.json
      ? undefined
      : (r) => {
          const key = `${r.specFile}\u0000${r.error}`;
          const earlier = r.verdict === 'error' ? firstWithError.get(key) : undefined;
          if (r.verdict === 'error' && earlier === undefined) firstWithError.set(key, r.permutation);
          console.log(renderPermutation(r, options.verbose, earlier));
        },
  };
  const watch = watchSignals();
  scenarioOptions.signal = watch.signal;
  scenarioOptions.onInterrupt = (line) => {
    watch.lastWords = () => line;
  };
  let run: Awaited<ReturnType<typeof runScenarios>>;
  try {
    run = await runScenarios(files, scenarioOptions);
  } catch (e) {
    if (e instanceof InterruptedError) {
      process.stderr.write(`isocheck: ${e.message}\n`);
      return e.exitCode;
    }
    throw e;
  } finally {
    watch.dispose();
  }
  const results = run.results;
  if (options.json) {
    console.log(JSON.stringify(results.map(scenarioJsonOf), null, 2));
  } else {
    const count = (v: string) => results.filter((r) => r.verdict === v).length;
    const specs = new Set(results.map((r) => r.specFile)).size;
    console.log(
      `total: ${results.length} permutation${results.length === 1 ? '' : 's'} of ${specs} ` +
        `spec${specs === 1 ? '' : 's'}: ${count('consistent')} consistent, ${count('inconsistent')} ` +
        `inconsistent, ${count('unknown')} unknown, ${count('error')} not recordable or bad input (histories ` +
        `in ${run.outDir})`,
    );
  }
  return scenarioExitCode(results);
}
