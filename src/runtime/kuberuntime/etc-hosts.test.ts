import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { KubeletPod, Pod } from '../../api/types.ts';
import { ensureEtcHostsMount, managedHostsContent, podHostDomain, wantsEtcHosts } from './etc-hosts.ts';

const pod = (spec: Partial<Pod['spec']> = {}): KubeletPod => ({
  metadata: { name: 'web', namespace: 'ns', uid: 'u1' },
  spec: { containers: [{ name: 'c' }], ...spec },
});

describe('kubelet-managed /etc/hosts', () => {
  it('lists localhost, the pod IPs with its hostname and FQDN, then the host aliases, as upstream', () => {
    const p = pod({ subdomain: 'sub', hostAliases: [{ ip: '10.1.2.3', hostnames: ['foo', 'bar'] }] });
    assert.equal(
      managedHostsContent(p, ['10.88.0.5'], 'web', podHostDomain(p, 'cluster.local')),
      '# Kubernetes-managed hosts file.\n' +
        '127.0.0.1\tlocalhost\n' +
        '::1\tlocalhost ip6-localhost ip6-loopback\n' +
        'fe00::0\tip6-localnet\n' +
        'fe00::0\tip6-mcastprefix\n' +
        'fe00::1\tip6-allnodes\n' +
        'fe00::2\tip6-allrouters\n' +
        '10.88.0.5\tweb.sub.ns.svc.cluster.local\tweb\n' +
        '\n# Entries added by HostAliases.\n' +
        '10.1.2.3\tfoo\tbar\n',
    );
    assert.match(managedHostsContent(pod(), ['10.88.0.5'], 'web', ''), /\n10\.88\.0\.5\tweb\n$/);
  });

  it('writes the file under the pod dir, gives host-network pods the node file, and skips containers that mount /etc/hosts', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tsk-hosts-'));
    try {
      const m = await ensureEtcHostsMount({
        pod: pod(),
        podDir: dir,
        podIPs: ['10.0.0.9'],
        hostname: 'web',
        clusterDomain: '',
      });
      assert.deepEqual(m, {
        containerPath: '/etc/hosts',
        hostPath: join(dir, 'etc-hosts'),
        readonly: false,
        selinuxRelabel: true,
      });
      assert.match(await readFile(join(dir, 'etc-hosts'), 'utf8'), /^# Kubernetes-managed hosts file\.\n/);
      assert.equal(
        await ensureEtcHostsMount({
          pod: pod(),
          podDir: dir,
          podIPs: [],
          hostname: 'web',
          clusterDomain: '',
        }),
        undefined,
      );
      const nodeHosts = join(dir, 'node-hosts');
      await writeFile(nodeHosts, '127.0.0.1 localhost node\n');
      const hostPod = pod({ hostNetwork: true, hostAliases: [{ ip: '1.2.3.4', hostnames: ['x'] }] });
      await ensureEtcHostsMount({
        pod: hostPod,
        podDir: dir,
        podIPs: [],
        hostname: 'web',
        clusterDomain: '',
        nodeHostsFile: nodeHosts,
      });
      assert.equal(
        await readFile(join(dir, 'etc-hosts'), 'utf8'),
        '# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost node\n\n# Entries added by HostAliases.\n1.2.3.4\tx\n',
      );
      assert.equal(
        wantsEtcHosts({ name: 'c', volumeMounts: [{ name: 'v', mountPath: '/etc/hosts' }] }),
        false,
      );
      assert.equal(wantsEtcHosts({ name: 'c' }), true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
