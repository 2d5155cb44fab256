/**
 * The `run` command's kubelet-compatible flags, built from the config field table
 * (`config/fields.ts`): one option per row that has a flag, with the row's help text and the
 * parser of its kind. Flags given on the command line override the `--config` file; flags not
 * given never do (no commander defaults: a value is present only when its flag was given). Both
 * `--flag=value` and `--flag value` work.
 *
 * Upstream flags tskubelet does not implement yet are accepted (hidden from help) and reported as
 * warnings, so an existing kubelet command line keeps working; anything else is an error.
 */
import { Command, CommanderError, Option } from 'commander';
import {
  ALL_FIELDS,
  NOT_IMPLEMENTED,
  compileConfig,
  loadConfigFile,
  mergeConfigDropIns,
  type CompileOptions,
  type CompiledConfig,
  type FieldSpec,
  type FlagSpec,
  type FlagValues,
  type ServerFlagValues,
} from '../config/index.ts';
import { KubeletError } from '../util/errors.ts';
import {
  boolOption,
  parseInt32,
  parseInt64,
  parseManifestURLHeader,
  mapStringStringParser,
  parseFeatureGates,
  parseNodeLabels,
  parseRegisterWithTaints,
  parseStringSlice,
} from './option-parsers.ts';
import { versionOption, type VersionRequest } from './version.ts';

/** The commander option of a table row, with the parser of the row's kind. */
function optionOf(spec: FieldSpec, flag: FlagSpec, name: string, help: string): Option {
  const flags = `${flag.short && name === flag.name ? `${flag.short}, ` : ''}--${name}`;
  if (spec.kind === 'bool') return boolOption(flags, help);
  const option = new Option(`${flags} ${flag.arg ?? '<value>'}`, help);
  if (flag.choices) option.choices(flag.choices);
  switch (spec.kind) {
    case 'int32':
      return option.argParser(parseInt32);
    case 'int64':
      return option.argParser(parseInt64);
    case 'stringList':
      return option.argParser(parseStringSlice);
    case 'headerMap':
      return option.argParser(parseManifestURLHeader);
    case 'taints':
      return option.argParser(parseRegisterWithTaints);
    case 'labels':
      return option.argParser(parseNodeLabels);
    case 'stringMap':
      return option.argParser(mapStringStringParser('='));
    case 'thresholdMap':
      return option.argParser(mapStringStringParser('<'));
    case 'boolMap':
      return option.argParser(parseFeatureGates);
    case 'string':
    case 'duration':
      return option;
  }
}

interface RowOption {
  readonly key: string;
  readonly group: 'kubelet' | 'server';
  readonly flag: FlagSpec;
  readonly option: Option;
  readonly alias?: Option;
}

/** Adds one option per row of the field table that has a flag, in table order. */
function addFieldOptions(cmd: Command): RowOption[] {
  const rows: RowOption[] = [];
  for (const { key, spec, group } of ALL_FIELDS) {
    const flag = spec.flag;
    if (!flag) continue;
    const option = optionOf(spec, flag, flag.name, spec.help);
    cmd.addOption(option);
    let alias: Option | undefined;
    if (flag.alias) {
      alias = optionOf(spec, flag, flag.alias, `alias of --${flag.name}`);
      cmd.addOption(alias);
    }
    rows.push({ key, group, flag, option, ...(alias ? { alias } : {}) });
  }
  return rows;
}

/** The given flags as `FlagValues`: a key only for each flag given (or its alias). */
function flagValuesOf(cmd: Command, rows: readonly RowOption[]): FlagValues {
  const given = cmd.opts<Record<string, unknown>>();
  const kubelet: Record<string, unknown> = {};
  const server: Record<string, unknown> = {};
  for (const { key, group, flag, option, alias } of rows) {
    let value = given[option.attributeName()];
    if (alias) {
      const aliasValue = given[alias.attributeName()];
      if (value !== undefined && aliasValue !== undefined && value !== aliasValue) {
        throw new KubeletError(
          'InvalidArgument',
          'parse flags',
          `--${flag.alias}=${shown(aliasValue)} conflicts with --${flag.name}=${shown(value)}`,
        );
      }
      value ??= aliasValue;
    }
    if (value !== undefined) (group === 'server' ? server : kubelet)[key] = value;
  }
  // Each value came from the parser of its row's kind, the type FlagValues derives from the row.
  const flags: FlagValues = kubelet;
  const serverFlags: ServerFlagValues = server;
  if (Object.keys(serverFlags).length > 0) flags.server = serverFlags;
  return flags;
}

function shown(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * Builds the `run` command. When it runs, it loads `--config` (if given), merges the `--config-dir`
 * drop-ins over it, overlays the explicit flags, validates, and calls `onRun` with the frozen
 * config and every warning (unimplemented file fields and flags, deprecated forms). Errors
 * (`KubeletError('InvalidArgument' | 'NotFound')`) propagate out of commander's `parseAsync`.
 * `--version` calls `onVersion` instead, before any file is read or any value checked (upstream
 * verflag.PrintAndExitIfRequested); without `onVersion` it is an error.
 */
export function buildRunCommand(
  onRun: (result: CompiledConfig) => Promise<void>,
  options: CompileOptions = {},
  onVersion?: (request: Exclude<VersionRequest, 'false'>) => void,
): Command {
  const cmd = new Command('run')
    .description('Run the kubelet: static pods from a directory or URL, optionally joined to a cluster.')
    .allowExcessArguments(false)
    .option('--config <file>', 'KubeletConfiguration file (YAML or JSON); explicit flags override it')
    .option(
      '--config-dir <dir>',
      'directory of KubeletConfiguration drop-ins (*.conf, in lexical order) merged over --config; explicit flags override them',
    )
    .addOption(versionOption());
  const rows = addFieldOptions(cmd);

  const notImplemented: Option[] = [];
  for (const { flag, bool } of NOT_IMPLEMENTED) {
    if (!flag) continue;
    const option = bool
      ? boolOption(`--${flag}`, 'not implemented (ignored)')
      : new Option(`--${flag} <value>`, 'not implemented (ignored)');
    option.hideHelp();
    notImplemented.push(option);
    cmd.addOption(option);
  }

  cmd.action(async () => {
    const given = cmd.opts<{ config?: string; configDir?: string; version?: VersionRequest }>();
    if (given.version !== undefined && given.version !== 'false') {
      if (!onVersion)
        throw new KubeletError('InvalidArgument', 'parse flags', '--version is not available here');
      onVersion(given.version);
      return;
    }
    const warnings: string[] = [];
    for (const option of notImplemented) {
      if (cmd.getOptionValueSource(option.attributeName()) === 'cli') {
        warnings.push(
          `flag ${option.long ?? option.flags} is not implemented by tskubelet yet and is ignored`,
        );
      }
    }
    const flags = flagValuesOf(cmd, rows);
    // Upstream treats an empty --config (and --config-dir) as "none".
    let file = given.config ? await loadConfigFile(given.config) : undefined;
    if (given.configDir) file = await mergeConfigDropIns(file, given.configDir);
    const compiled = compileConfig(file, flags, options);
    await onRun({ config: compiled.config, warnings: [...compiled.warnings, ...warnings] });
  });
  return cmd;
}

/**
 * Parses `run` arguments (without the `run` word itself) into the compiled config, without
 * printing or exiting: commander usage errors become `KubeletError('InvalidArgument', 'parse flags')`.
 * For tests and callers that need the config without running anything.
 */
export async function parseRunArgs(
  argv: readonly string[],
  options: CompileOptions = {},
): Promise<CompiledConfig> {
  let result: CompiledConfig | undefined;
  const cmd = buildRunCommand(async (r) => {
    result = r;
    return Promise.resolve();
  }, options);
  cmd.exitOverride();
  cmd.configureOutput({ writeOut: () => {}, writeErr: () => {} });
  try {
    await cmd.parseAsync([...argv], { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      throw new KubeletError('InvalidArgument', 'parse flags', err.message.replace(/^error: /, ''), {
        cause: err,
      });
    }
    throw err;
  }
  if (result === undefined)
    throw new KubeletError('Internal', 'parse flags', 'the run action did not complete');
  return result;
}

export { parseManifestURLHeader, parseNodeLabels, parseRegisterWithTaints, parseStringSlice };
