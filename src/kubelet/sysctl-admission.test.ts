import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod } from '../api/types.ts';
import { hasCode } from '../util/errors.ts';
import {
  SAFE_SYSCTLS,
  compileSysctlAllowlist,
  safeSysctlAllowlist,
  sysctlAdmitHandler,
  sysctlNamespace,
  sysctlPatternProblems,
} from './sysctl-admission.ts';
import { buildPod } from '../../test/kit/pod.ts';

function pod(sysctls: Record<string, string>, spec: Partial<Pod['spec']> = {}): Pod {
  return buildPod('p', {
    namespace: 'ns',
    uid: 'u',
    image: 'x:1',
    spec: {
      securityContext: { sysctls: Object.entries(sysctls).map(([name, value]) => ({ name, value })) },
      ...spec,
    },
  });
}

const handler = (allowedUnsafeSysctls: string[] = [], kernelRelease = '6.1.0-13-amd64') =>
  sysctlAdmitHandler({ allowedUnsafeSysctls, kernelRelease });

describe('safe sysctls', () => {
  it('lists the upstream safe set with the release each joined it', () => {
    const since = Object.fromEntries(SAFE_SYSCTLS.map((s) => [s.name, s.since]));
    assert.equal(since['kernel.shm_rmid_forced'], '1.4');
    assert.equal(since['net.ipv4.ping_group_range'], '1.18');
    assert.equal(since['net.ipv4.ip_unprivileged_port_start'], '1.22');
    assert.equal(since['net.ipv4.ip_local_reserved_ports'], '1.27');
    assert.equal(since['net.ipv4.tcp_keepalive_time'], '1.29');
    assert.equal(since['net.ipv4.tcp_rmem'], '1.32');
    assert.equal(since['net.ipv4.tcp_notsent_lowat'], '1.37');
    assert.equal(SAFE_SYSCTLS.length, 14);
  });

  it('drops the sysctls an old kernel does not namespace, as upstream', () => {
    const dropped: string[] = [];
    const list = safeSysctlAllowlist('4.4.0-210-generic', (n) => dropped.push(n));
    assert.ok(list.includes('net.ipv4.ip_local_reserved_ports')); // 3.16+
    assert.ok(!list.includes('net.ipv4.tcp_keepalive_time')); // 4.5+
    assert.ok(!list.includes('net.ipv4.tcp_rmem')); // 4.15+
    assert.deepEqual(dropped.sort(), [
      'net.ipv4.tcp_fin_timeout',
      'net.ipv4.tcp_keepalive_intvl',
      'net.ipv4.tcp_keepalive_probes',
      'net.ipv4.tcp_keepalive_time',
      'net.ipv4.tcp_notsent_lowat',
      'net.ipv4.tcp_rmem',
      'net.ipv4.tcp_slow_start_after_idle',
      'net.ipv4.tcp_wmem',
    ]);
    assert.equal(safeSysctlAllowlist('6.18.44-fc-v669').length, 14);
  });

  it('keeps only the sysctls without a kernel minimum when the kernel version is unreadable', () => {
    assert.deepEqual(safeSysctlAllowlist('unknown'), [
      'kernel.shm_rmid_forced',
      'net.ipv4.ip_local_port_range',
      'net.ipv4.tcp_syncookies',
      'net.ipv4.ping_group_range',
      'net.ipv4.ip_unprivileged_port_start',
    ]);
  });
});

describe('sysctl namespaces', () => {
  it('knows the IPC and network sysctls, and nothing else', () => {
    assert.equal(sysctlNamespace('kernel.sem'), 'ipc');
    assert.equal(sysctlNamespace('kernel.shmmax'), 'ipc');
    assert.equal(sysctlNamespace('kernel.msgmax'), 'ipc');
    assert.equal(sysctlNamespace('fs.mqueue.msg_max'), 'ipc');
    assert.equal(sysctlNamespace('net.core.somaxconn'), 'net');
    assert.equal(sysctlNamespace('kernel.semx'), undefined);
    assert.equal(sysctlNamespace('vm.swappiness'), undefined);
    assert.equal(sysctlNamespace('kernel.hostname'), undefined);
  });
});

describe('allowed unsafe sysctl patterns', () => {
  it('accepts names and trailing-* prefixes of namespaced sysctls, in either separator form', () => {
    assert.deepEqual(
      sysctlPatternProblems(['kernel.msg*', 'net.core.somaxconn', 'fs/mqueue/*', 'net.*']),
      [],
    );
  });

  it('refuses malformed patterns and sysctls that are not namespaced, naming each', () => {
    const problems = sysctlPatternProblems(['vm.swappiness', 'kernel.*', 'Net.Core', '*', 'net.*.x']);
    assert.equal(problems.length, 5);
    assert.match(problems[0] ?? '', /"vm\.swappiness" is not known to be namespaced/);
    assert.match(problems[1] ?? '', /"kernel\.\*" is not known to be namespaced/);
    assert.match(problems[2] ?? '', /"Net\.Core" must have at most 253 characters and match regex/);
    assert.match(problems[3] ?? '', /"\*" is not known to be namespaced/);
    assert.match(problems[4] ?? '', /"net\.\*\.x" must have at most/);
    assert.throws(
      () => compileSysctlAllowlist(['vm.swappiness']),
      (err: unknown) => hasCode(err, 'InvalidArgument'),
    );
  });
});

describe('sysctl admission', () => {
  it('admits a pod without sysctls, and one with safe sysctls', () => {
    assert.deepEqual(handler().admit(pod({}), []), { admit: true });
    const r = handler().admit(
      pod({ 'kernel.shm_rmid_forced': '1', 'net.ipv4.ip_local_port_range': '1024 65535' }),
      [],
    );
    assert.deepEqual(r, { admit: true });
  });

  it('refuses an unsafe sysctl that is not allowed with SysctlForbidden and the upstream message', () => {
    const r = handler().admit(pod({ 'net.core.somaxconn': '1024' }), []);
    assert.deepEqual(r, {
      admit: false,
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "net.core.somaxconn" not allowlisted',
    });
  });

  it('admits unsafe sysctls allowed by name or by prefix', () => {
    const h = handler(['net.core.somaxconn', 'kernel.msg*']);
    assert.deepEqual(h.admit(pod({ 'net.core.somaxconn': '1024', 'kernel.msgmax': '65536' }), []), {
      admit: true,
    });
    assert.equal(h.admit(pod({ 'kernel.shmmax': '1' }), []).admit, false);
  });

  it('always refuses sysctls the kernel does not namespace', () => {
    assert.equal(handler().admit(pod({ 'vm.swappiness': '10' }), []).admit, false);
    assert.throws(
      () => handler(['vm.swappiness']),
      (err: unknown) => hasCode(err, 'InvalidArgument'),
    );
  });

  it('refuses net.* sysctls for a hostNetwork pod, safe ones included', () => {
    const r = handler().admit(
      pod({ 'net.ipv4.ip_local_port_range': '1024 65535' }, { hostNetwork: true }),
      [],
    );
    assert.deepEqual(r, {
      admit: false,
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host net enabled',
    });
    assert.equal(
      handler().admit(pod({ 'kernel.shm_rmid_forced': '1' }, { hostNetwork: true }), []).admit,
      true,
    );
  });

  it('refuses the IPC sysctls for a hostIPC pod, allowed unsafe ones included', () => {
    const r = handler().admit(pod({ 'kernel.shm_rmid_forced': '1' }, { hostIPC: true }), []);
    assert.equal(r.reason, 'SysctlForbidden');
    assert.equal(r.message, 'forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host ipc enabled');
    const allowed = handler(['kernel.sem', 'fs.mqueue.*']);
    assert.equal(
      allowed.admit(pod({ 'kernel.sem': '250 32000 32 128' }, { hostIPC: true }), []).admit,
      false,
    );
    assert.equal(allowed.admit(pod({ 'fs.mqueue.msg_max': '20' }, { hostIPC: true }), []).admit, false);
    assert.equal(allowed.admit(pod({ 'net.ipv4.tcp_syncookies': '1' }, { hostIPC: true }), []).admit, true);
  });

  it('accepts the slash-separated form and reports the dotted name', () => {
    assert.deepEqual(handler().admit(pod({ 'kernel/shm_rmid_forced': '1' }), []), { admit: true });
    const r = handler().admit(pod({ 'net/core/somaxconn': '1024' }), []);
    assert.equal(r.message, 'forbidden sysctl: "net.core.somaxconn" not allowlisted');
    assert.equal(handler(['net/core/*']).admit(pod({ 'net.core.somaxconn': '1' }), []).admit, true);
  });
});
