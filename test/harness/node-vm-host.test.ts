import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { realpath } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CHECKOUT,
  NODE_VM_GUEST_ADDRESS,
  checkSharePath,
  defaultShares,
  devicesWithAddress,
  extraHostAddresses,
  localRouteArgs,
  localRouteReady,
  portForwards,
  userNetOption,
} from './node-vm-host.ts';
import { hasCode } from '../../src/util/errors.ts';

describe('node VM shares', () => {
  it('refuses a share path the kernel command line cannot carry', () => {
    for (const p of ['relative/dir', '/with space', '/with:colon', '/with,comma']) {
      assert.throws(
        () => checkSharePath(p),
        (err: unknown) => hasCode(err, 'InvalidArgument'),
        p,
      );
    }
    assert.doesNotThrow(() => checkSharePath('/work/checkout-1'));
  });

  it("shares the checkout, and node_modules' target when it lies outside it, read-only", async () => {
    const shares = await defaultShares();
    assert.equal(shares[0]?.hostPath, CHECKOUT);
    const modules = await realpath(join(CHECKOUT, 'node_modules'));
    const outside = !modules.startsWith(`${CHECKOUT}/`);
    assert.equal(shares.length, outside ? 2 : 1);
    if (outside) assert.equal(shares[1]?.hostPath, modules);
    assert.ok(shares.every((s) => s.readOnly !== false));
  });
});

describe('node VM port forwards', () => {
  it('forwards a bare port from the host loopback, and a port with an address from that address', () => {
    const forwards = portForwards([5000, { port: 10250, hostAddress: NODE_VM_GUEST_ADDRESS }]);
    assert.equal(
      userNetOption(10022, forwards),
      'user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:10022-:22,' +
        'hostfwd=tcp:127.0.0.1:5000-:5000,hostfwd=tcp:10.0.2.15:10250-:10250',
    );
  });

  it('names each host address the loopback lacks once, and never 127.0.0.1', () => {
    const forwards = portForwards([
      10250,
      { port: 10250, hostAddress: '10.0.2.15' },
      { port: 10255, hostAddress: '10.0.2.15' },
      { port: 5000, hostAddress: '127.0.0.1' },
    ]);
    assert.deepEqual(extraHostAddresses(forwards), ['10.0.2.15']);
    assert.deepEqual(extraHostAddresses(portForwards([22, 10250])), []);
  });

  it('refuses a port out of range or an address QEMU cannot bind', () => {
    for (const bad of [
      0,
      65_536,
      1.5,
      { port: 10250, hostAddress: 'localhost' },
      { port: 1, hostAddress: '::1' },
    ]) {
      assert.throws(
        () => portForwards([bad]),
        (err: unknown) => hasCode(err, 'InvalidArgument'),
        JSON.stringify(bad),
      );
    }
  });
});

describe('the host address of a forward', () => {
  const ipAddrShow = [
    '1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever',
    '1: lo    inet 10.0.2.15/32 scope global lo\\       valid_lft forever preferred_lft forever',
    '4: eth0    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0\\       valid_lft forever',
    '5: tskbed0    inet 10.0.2.150/16 scope global tskbed0\\       valid_lft forever',
  ].join('\n');

  it('finds the interfaces that carry an address, not those with a longer one sharing its prefix', () => {
    assert.deepEqual(devicesWithAddress(ipAddrShow, '10.0.2.15'), ['lo']);
    assert.deepEqual(devicesWithAddress(ipAddrShow, '192.0.2.2'), ['eth0']);
    assert.deepEqual(devicesWithAddress(ipAddrShow, '10.0.2.1'), []);
  });

  it('routes the address locally with 127.0.0.1 as source, which QEMU shows the guest as 10.0.2.2', () => {
    assert.equal(
      localRouteArgs('10.0.2.15').join(' '),
      'route replace local 10.0.2.15 dev lo table local scope host src 127.0.0.1',
    );
    assert.equal(localRouteReady('local 10.0.2.15 dev lo scope host src 127.0.0.1 \n', '10.0.2.15'), true);
  });

  it('redoes the route when it is missing, has another source, or competes with the address own route', () => {
    for (const routes of [
      '',
      'local 10.0.2.15 dev lo proto kernel scope host src 10.0.2.15 \n',
      'local 10.0.2.15 dev lo proto kernel scope host src 127.0.0.1 \nlocal 10.0.2.15 dev lo proto kernel scope host src 10.0.2.15 \n',
      'local 10.0.2.150 dev lo scope host src 127.0.0.1 \n',
    ]) {
      assert.equal(localRouteReady(routes, '10.0.2.15'), false, routes);
    }
  });
});
