import { planResume } from '../../resume/plan-resume.js';
import { runArgument, type Command } from '../command.js';
import { printJson, EXIT } from '../io.js';

const BOX = [
  '╔══════════════════════════════════════════════════╗',
  '║  CONTINUATION PROMPT                             ║',
  '╚══════════════════════════════════════════════════╝',
];

/** `savepoint resume RUN` */
export const resumeCommand: Command = {
  name: 'resume',
  usage: 'RUN',
  maxPositionals: 1,
  summary: 'Show where and why a run resumes, and its continuation prompt where the profile has one',
  options: {},
  async run(ctx) {
    const runId = runArgument(ctx, 'resume');
    const plan = await planResume({ storage: ctx.storage, profile: ctx.profile, runId, clock: ctx.clock });
    if (ctx.json) {
      printJson(ctx.io, plan);
      return EXIT.ok;
    }
    const { style } = ctx;
    const out = [
      `${style.bold('run')}           ${plan.runId}`,
      `${style.bold('restored')}      #${plan.snapshot.sequence} ${plan.snapshot.id} (${plan.snapshot.status}, ${plan.snapshot.createdAt}) from ${plan.source.origin} ${plan.source.key}`,
      `${style.bold('resume at')}     ${plan.at}${plan.eligible ? '' : style.yellow(' (not eligible for automatic resume)')}`,
      `${style.bold('why')}           ${plan.explanation} [${plan.reason}]`,
      ...(plan.completed.length > 0 ? [`${style.bold('completed')}     ${plan.completed.join(', ')}`] : []),
      ...(plan.remaining.length > 0 ? [`${style.bold('remaining')}     ${plan.remaining.join(', ')}`] : []),
      `${style.bold('next sequence')} ${plan.nextSequence}`,
      ...plan.warnings.map((w) => `${style.yellow('warning')}       ${w.message} [${w.code}]`),
      ...plan.skipped.map((s) => `${style.red('skipped')}       ${s.key}: ${s.issue} [${s.reasonCode}]`),
    ];
    if (plan.message) out.push('', plan.message);
    if (plan.continuationPrompt) out.push('', ...BOX, '', plan.continuationPrompt);
    ctx.io.stdout.write(`${out.join('\n')}\n`);
    return EXIT.ok;
  },
};
