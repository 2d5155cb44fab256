/**
 * Huge-pages resource names (upstream pkg/apis/core/v1/helper IsHugePageResourceName,
 * HugePageSizeFromResourceName, HugePageUnitSizeFromByteSize): `hugepages-2Mi` is a 2 MiB page
 * size, named "2MB" as the kernel's hugetlb cgroup files and CRI's HugepageLimit name it.
 */
import { parseQuantity } from './quantity.ts';

const HUGE_PAGES_PREFIX = 'hugepages-';
const UNITS = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'];

/** Whether a resource name is a huge-pages one (`hugepages-2Mi`). */
export function isHugePagesResource(name: string): boolean {
  return name.startsWith(HUGE_PAGES_PREFIX);
}

/**
 * Upstream HugePageUnitSizeFromByteSize: 2097152 → "2MB", 1073741824 → "1GB"; undefined for a
 * size that is not a whole number of its largest unit.
 */
export function hugePageSizeName(bytes: number): string | undefined {
  if (!Number.isSafeInteger(bytes) || bytes <= 0) return undefined;
  let size = bytes;
  let idx = 0;
  while (size % 1024 === 0 && idx < UNITS.length - 1) {
    size /= 1024;
    idx++;
  }
  if (size > 1024 && idx < UNITS.length - 1) return undefined;
  return `${size}${UNITS[idx]}`;
}

/** `hugepages-2Mi` → "2MB"; undefined for any other resource name. */
export function hugePageSizeOfResource(name: string): string | undefined {
  if (!isHugePagesResource(name)) return undefined;
  const quantity = name.slice(HUGE_PAGES_PREFIX.length);
  // Anything else is refused by upstream's validation of the resource name: nothing to limit.
  if (!/^[0-9]+(?:Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$/.test(quantity)) return undefined;
  return hugePageSizeName(parseQuantity(quantity, name));
}
