/** Go's names for this platform (GOOS / GOARCH), as the kubelet reports them in labels and nodeInfo. */

/** Go's GOARCH for Node's process.arch. */
export function goArch(arch: string = process.arch): string {
  const map: Record<string, string> = {
    x64: 'amd64',
    ia32: '386',
    arm64: 'arm64',
    arm: 'arm',
    ppc64: 'ppc64le',
    s390x: 's390x',
    riscv64: 'riscv64',
    loong64: 'loong64',
    mips: 'mips',
    mipsel: 'mipsle',
  };
  return map[arch] ?? arch;
}

/** Go's GOOS for Node's process.platform. */
export function goOS(platform: string = process.platform): string {
  return platform === 'win32' ? 'windows' : platform;
}
