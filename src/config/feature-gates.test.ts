// Feature gates (src/config/feature-gates.ts); upstream: k8s.io/component-base/featuregate
// feature_gate.go (SetFromMap), pkg/features/kube_features.go 1.20, cmd/kubelet/app/server.go
// (kubeletConfigFlagPrecedence keeps the file's gates the flags do not set).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRunArgs } from '../cli/flags.ts';
import { parseFeatureGates } from '../cli/option-parsers.ts';
import { toKubeletConfiguration } from './configz.ts';
import { featureEnabled, KUBELET_1_20_FEATURE_GATES, resolveFeatureGates } from './feature-gates.ts';
import { assertInvalid, compileFields as compile } from './testing.ts';

describe('the known feature gates', () => {
  it("are kubelet 1.20.2's: 119 gates, 89 alpha or beta (what `kubelet --help` lists), AllAlpha and AllBeta among them", () => {
    const all = Object.entries(KUBELET_1_20_FEATURE_GATES);
    assert.equal(all.length, 119);
    assert.equal(all.filter(([, s]) => s.stage === 'Alpha' || s.stage === 'Beta').length, 89);
    assert.deepEqual(KUBELET_1_20_FEATURE_GATES.AllAlpha, { default: false, stage: 'Alpha' });
    assert.deepEqual(KUBELET_1_20_FEATURE_GATES.GracefulNodeShutdown, { default: false, stage: 'Alpha' });
    assert.deepEqual(KUBELET_1_20_FEATURE_GATES.RotateKubeletServerCertificate, {
      default: true,
      stage: 'Beta',
    });
    assert.deepEqual(KUBELET_1_20_FEATURE_GATES.NodeLease, {
      default: true,
      stage: 'GA',
      lockToDefault: true,
    });
    // Gates of later releases are unknown to 1.20.
    assert.equal(KUBELET_1_20_FEATURE_GATES.MemoryQoS, undefined);
  });
});

describe('resolveFeatureGates', () => {
  const resolve = (given: Record<string, boolean>) => {
    const errors: string[] = [];
    const warnings: string[] = [];
    const enabled = resolveFeatureGates(given, errors, warnings);
    return { enabled, errors, warnings };
  };

  it("refuses an unknown gate with upstream's message", () => {
    assert.deepEqual(resolve({ MemoryQoS: true }).errors, ['unrecognized feature gate: MemoryQoS']);
    assert.deepEqual(resolve(JSON.parse('{"__proto__": true}') as Record<string, boolean>).errors, [
      'unrecognized feature gate: __proto__',
    ]);
  });

  it('refuses a locked gate set away from its default, and warns for GA and deprecated gates', () => {
    assert.deepEqual(resolve({ NodeLease: false }).errors, [
      'cannot set feature gate NodeLease to false, feature is locked to true',
    ]);
    const r = resolve({ NodeLease: true, StreamingProxyRedirects: false });
    assert.deepEqual(r.errors, []);
    assert.deepEqual(r.warnings, [
      'Setting GA feature gate NodeLease=true. It will be removed in a future release.',
      'Setting deprecated feature gate StreamingProxyRedirects=false. It will be removed in a future release.',
    ]);
  });

  it('applies defaults, AllAlpha/AllBeta to the gates not set explicitly, and explicit values over both', () => {
    assert.equal(resolve({}).enabled.GracefulNodeShutdown, false);
    assert.equal(resolve({}).enabled.AppArmor, true);
    const all = resolve({
      AllAlpha: true,
      AllBeta: false,
      EphemeralContainers: false,
      AppArmor: true,
    }).enabled;
    assert.equal(all.GracefulNodeShutdown, true);
    assert.equal(all.EphemeralContainers, false);
    assert.equal(all.RotateKubeletServerCertificate, false);
    assert.equal(all.AppArmor, true);
    assert.equal(all.NodeLease, true, 'GA gates are not touched');
    assert.equal(featureEnabled({ AllAlpha: true }, 'GracefulNodeShutdown'), true);
    assert.equal(featureEnabled({}, 'GracefulNodeShutdown'), false);
  });
});

describe('--feature-gates', () => {
  it('reads Name=bool pairs as MapStringBool does, with its messages', () => {
    assert.deepEqual(parseFeatureGates(' AppArmor = T ,,GracefulNodeShutdown=true', undefined), {
      AppArmor: true,
      GracefulNodeShutdown: true,
    });
    assert.deepEqual(parseFeatureGates('AppArmor=false', { AppArmor: true, AllBeta: true }), {
      AppArmor: false,
      AllBeta: true,
    });
    assert.throws(
      () => parseFeatureGates('AppArmor', undefined),
      /^InvalidArgumentError: malformed pair, expect string=bool$/,
    );
    assert.throws(
      () => parseFeatureGates('AppArmor=maybe', undefined),
      /invalid value of AppArmor: maybe, err: strconv\.ParseBool: parsing "maybe": invalid syntax/,
    );
  });

  it('accepts known gates from the flag, repeated, into the compiled config', async () => {
    const { config } = await parseRunArgs([
      '--feature-gates=AppArmor=false',
      '--feature-gates',
      'GracefulNodeShutdown=true',
    ]);
    assert.deepEqual(config.featureGates, { AppArmor: false, GracefulNodeShutdown: true });
  });

  it('refuses an unknown gate from the flag, naming the flag', async () => {
    await assert.rejects(
      parseRunArgs(['--feature-gates=NoSuchGate=true']),
      /--feature-gates: unrecognized feature gate: NoSuchGate/,
    );
  });
});

describe('featureGates in the file', () => {
  it('is a map of gate to boolean; a known gate compiles, an unknown one is an error naming the field', () => {
    assert.deepEqual(compile({ featureGates: { AppArmor: false } }).config.featureGates, { AppArmor: false });
    assertInvalid(
      () => compile({ featureGates: { NoSuchGate: true } }),
      /featureGates: unrecognized feature gate: NoSuchGate/,
    );
    assertInvalid(
      () => compile({ featureGates: { AppArmor: 'false' } }),
      /field "featureGates": expected a map of string to boolean/,
    );
    assertInvalid(
      () => compile({ featureGates: ['AppArmor'] }),
      /field "featureGates": expected a map of string to boolean/,
    );
  });

  it("is overridden gate by gate by --feature-gates; the file's other gates stay (upstream flag precedence)", () => {
    const { config } = compile(
      { featureGates: { AppArmor: false, GracefulNodeShutdown: true } },
      { featureGates: { AppArmor: true, AllAlpha: false } },
    );
    assert.deepEqual(config.featureGates, { AppArmor: true, GracefulNodeShutdown: true, AllAlpha: false });
  });

  it('is no longer reported as not implemented, and /configz shows it', () => {
    const { config, warnings } = compile({ featureGates: { AppArmor: true } });
    assert.deepEqual(warnings, []);
    assert.deepEqual(toKubeletConfiguration(config).featureGates, { AppArmor: true });
    assert.equal(toKubeletConfiguration(compile({}).config).featureGates, undefined);
  });
});
