import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  compileSysctlPatterns,
  sysctlNamespace,
  sysctlPatternProblems,
  sysctlToDots,
} from './sysctl-names.ts';

describe('sysctl names', () => {
  it('knows which namespace isolates a sysctl', () => {
    assert.equal(sysctlNamespace('kernel.sem'), 'ipc');
    assert.equal(sysctlNamespace('kernel.msgmax'), 'ipc');
    assert.equal(sysctlNamespace('net.core.somaxconn'), 'net');
    assert.equal(sysctlNamespace('vm.swappiness'), undefined);
  });

  it('turns slash-separated names into dotted ones, leaving dotted names alone', () => {
    assert.equal(sysctlToDots('net/ipv4/conf/eno2.100/rp_filter'), 'net.ipv4.conf.eno2/100.rp_filter');
    assert.equal(sysctlToDots('net.ipv4.ip_forward'), 'net.ipv4.ip_forward');
  });

  it('compiles well-formed namespaced patterns into names and prefixes', () => {
    const { list, problems } = compileSysctlPatterns(['kernel.msg*', 'net.core.somaxconn']);
    assert.deepEqual(problems, []);
    assert.deepEqual([...list.prefixes], [['kernel.msg', 'ipc']]);
    assert.deepEqual([...list.sysctls], [['net.core.somaxconn', 'net']]);
  });

  it('explains malformed and non-namespaced patterns, one line each', () => {
    const problems = sysctlPatternProblems(['Net.Core', 'vm.swappiness']);
    assert.equal(problems.length, 2);
    assert.match(problems[0] ?? '', /must have at most 253 characters and match regex/);
    assert.match(problems[1] ?? '', /"vm\.swappiness" is not known to be namespaced/);
  });
});

describe('sysctl names', () => {
  it('leaves dotted names alone', () => {
    assert.equal(sysctlToDots('net.ipv4.ip_local_port_range'), 'net.ipv4.ip_local_port_range');
    assert.equal(sysctlToDots('kernel.shm_rmid_forced'), 'kernel.shm_rmid_forced');
  });

  it('converts slash-separated names, swapping dots inside a component', () => {
    assert.equal(sysctlToDots('kernel/shm_rmid_forced'), 'kernel.shm_rmid_forced');
    assert.equal(sysctlToDots('net/ipv4/conf/eno2.100/rp_filter'), 'net.ipv4.conf.eno2/100.rp_filter');
  });

  it('keeps a name without separators', () => {
    assert.equal(sysctlToDots('kernel'), 'kernel');
    assert.equal(sysctlToDots(''), '');
  });
});
