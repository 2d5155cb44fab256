/**
 * Regenerates src/volume/csi/csi.proto, the CSI spec's gRPC API, from the Kubernetes 1.20.2
 * source tree the test bed unpacks. Upstream counterpart: none in the kubelet, which links the
 * generated Go package vendor/github.com/container-storage-interface/spec/lib/go/csi (spec v1.2.0,
 * vendor/modules.txt); the spec repository's csi.proto is not on this machine, but csi.pb.go embeds
 * the gzipped FileDescriptorProto it was generated from (`fileDescriptor_9cdb00adce470e01`). This
 * script decodes that descriptor (protobufjs's descriptor.proto types) and writes it back out as
 * proto3 text: the same messages, fields, numbers, enums, oneofs, maps, services and the
 * `csi_secret` field option. Comments are not in a Go descriptor and so not in the output.
 *
 * Usage: node scripts/csi-proto.ts [kubernetes-source-dir] (default the bed's
 * /var/cache/tskubelet-bed/src/kubernetes-1.20.2); prints nothing and exits 0 when the file is
 * current, rewrites it otherwise. src/volume/csi/proto.test.ts checks the checked-in file matches.
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { createRequire } from 'node:module';

/** Where the bed unpacks the Kubernetes source (test/harness/build.ts). */
export const BED_KUBERNETES_SRC = '/var/cache/tskubelet-bed/src/kubernetes-1.20.2';
export const CSI_PB_GO = 'vendor/github.com/container-storage-interface/spec/lib/go/csi/csi.pb.go';
export const CSI_PROTO_OUT = path.join(import.meta.dirname, '..', 'src', 'volume', 'csi', 'csi.proto');

interface FieldDesc {
  name: string;
  number: number;
  label: 'LABEL_OPTIONAL' | 'LABEL_REPEATED' | 'LABEL_REQUIRED';
  type: string;
  typeName?: string;
  extendee?: string;
  oneofIndex?: number;
  options?: Record<string, unknown>;
}
interface EnumDesc {
  name: string;
  value: { name: string; number: number; options?: Record<string, unknown> }[];
  options?: Record<string, unknown>;
}
interface MessageDesc {
  name: string;
  field?: FieldDesc[];
  nestedType?: MessageDesc[];
  enumType?: EnumDesc[];
  oneofDecl?: { name: string }[];
  options?: { mapEntry?: boolean } & Record<string, unknown>;
  extension?: unknown[];
  reservedRange?: unknown[];
  reservedName?: unknown[];
  extensionRange?: unknown[];
}
interface ServiceDesc {
  name: string;
  method: {
    name: string;
    inputType: string;
    outputType: string;
    clientStreaming?: boolean;
    serverStreaming?: boolean;
    options?: Record<string, unknown>;
  }[];
}
interface FileDesc {
  name: string;
  package: string;
  dependency?: string[];
  messageType?: MessageDesc[];
  enumType?: EnumDesc[];
  service?: ServiceDesc[];
  extension?: FieldDesc[];
  options?: Record<string, unknown>;
  syntax?: string;
}

interface ProtobufType {
  decode(b: Uint8Array): object;
  toObject(m: object, o: { enums: StringConstructor }): unknown;
  add(f: object): void;
}
interface DescriptorModule {
  FileDescriptorProto: ProtobufType;
  FieldOptions: ProtobufType;
}
interface ProtobufModule {
  Field: new (name: string, id: number, type: string) => object;
}

const require = createRequire(import.meta.url);

/** The bytes of the gzipped FileDescriptorProto a protoc-gen-go file embeds. */
export function embeddedDescriptor(goSource: string): Buffer {
  const m = /var fileDescriptor_[0-9a-f]+ = \[\]byte\{([^}]*)\}/.exec(goSource);
  if (!m?.[1]) throw new Error('no fileDescriptor byte literal in the Go source');
  const bytes = [...m[1].matchAll(/0x([0-9a-f]{2})/g)].map((x) => parseInt(x[1] ?? '', 16));
  return zlib.gunzipSync(Buffer.from(bytes));
}

function decodeFile(raw: Buffer): FileDesc {
  const descriptor = require('protobufjs/ext/descriptor') as DescriptorModule;
  const protobuf = require('protobufjs') as ProtobufModule;
  const fd = descriptor.FileDescriptorProto;
  const first = fd.toObject(fd.decode(raw), { enums: String }) as FileDesc;
  // Custom field options (csi_secret) are extensions that descriptor.proto does not know: declare
  // them on FieldOptions (once per process) and decode again so they survive.
  for (const ext of first.extension ?? []) {
    if (ext.extendee !== '.google.protobuf.FieldOptions' || ext.type !== 'TYPE_BOOL')
      throw new Error(`unsupported extension ${ext.name} of ${ext.extendee}`);
    const fieldName = `ext_${ext.name}`;
    const opts = descriptor.FieldOptions as ProtobufType & { fields: Record<string, unknown> };
    if (!opts.fields[fieldName]) opts.add(new protobuf.Field(fieldName, ext.number, 'bool'));
  }
  return fd.toObject(fd.decode(raw), { enums: String }) as FileDesc;
}

const SCALARS: Record<string, string> = {
  TYPE_DOUBLE: 'double',
  TYPE_FLOAT: 'float',
  TYPE_INT64: 'int64',
  TYPE_UINT64: 'uint64',
  TYPE_INT32: 'int32',
  TYPE_FIXED64: 'fixed64',
  TYPE_FIXED32: 'fixed32',
  TYPE_BOOL: 'bool',
  TYPE_STRING: 'string',
  TYPE_BYTES: 'bytes',
  TYPE_UINT32: 'uint32',
  TYPE_SFIXED32: 'sfixed32',
  TYPE_SFIXED64: 'sfixed64',
  TYPE_SINT32: 'sint32',
  TYPE_SINT64: 'sint64',
};

/** A `.csi.v1.Foo.Bar` reference as written inside package csi.v1 (`Foo.Bar`); others without the dot. */
function typeRef(pkg: string, name: string): string {
  const own = `.${pkg}.`;
  return name.startsWith(own) ? name.slice(own.length) : name.replace(/^\./, '');
}

function unsupported(what: string, where: string, v: unknown): void {
  if (
    v !== undefined &&
    !(Array.isArray(v) && v.length === 0) &&
    !(typeof v === 'object' && v && Object.keys(v).length === 0)
  )
    throw new Error(`${where}: ${what} is not supported by this generator`);
}

function fieldOptions(f: FieldDesc): string {
  const opts = f.options ?? {};
  const parts: string[] = [];
  for (const [k, v] of Object.entries(opts)) {
    if (!k.startsWith('ext_')) throw new Error(`field ${f.name}: option ${k} is not supported`);
    parts.push(`(${k.slice(4)}) = ${String(v)}`);
  }
  return parts.length ? ` [${parts.join(', ')}]` : '';
}

function emitEnum(e: EnumDesc, indent: string, out: string[]): void {
  unsupported('enum options', e.name, e.options);
  out.push(`${indent}enum ${e.name} {`);
  for (const v of e.value) {
    unsupported('enum value options', v.name, v.options);
    out.push(`${indent}  ${v.name} = ${v.number};`);
  }
  out.push(`${indent}}`);
}

function emitMessage(pkg: string, m: MessageDesc, indent: string, out: string[]): void {
  for (const [what, v] of [
    ['extensions', m.extension],
    ['reserved ranges', m.reservedRange],
    ['reserved names', m.reservedName],
    ['extension ranges', m.extensionRange],
  ] as const)
    unsupported(what, m.name, v);
  const maps = new Map<string, MessageDesc>();
  for (const n of m.nestedType ?? []) if (n.options?.mapEntry) maps.set(n.name, n);
  out.push(`${indent}message ${m.name} {`);
  const inner = `${indent}  `;
  const fieldLine = (f: FieldDesc, ind: string): string => {
    const entry = f.typeName ? maps.get(f.typeName.split('.').pop() ?? '') : undefined;
    let type: string;
    if (entry && f.label === 'LABEL_REPEATED') {
      const [k, v] = entry.field ?? [];
      if (!k || !v) throw new Error(`${m.name}.${f.name}: a map entry without key and value`);
      type = `map<${SCALARS[k.type] ?? typeRef(pkg, k.typeName ?? '')}, ${SCALARS[v.type] ?? typeRef(pkg, v.typeName ?? '')}>`;
    } else {
      const base = SCALARS[f.type] ?? (f.typeName ? typeRef(pkg, f.typeName) : undefined);
      if (!base) throw new Error(`${m.name}.${f.name}: type ${f.type} is not supported`);
      if (f.label === 'LABEL_REQUIRED') throw new Error(`${m.name}.${f.name}: required in proto3`);
      type = f.label === 'LABEL_REPEATED' ? `repeated ${base}` : base;
    }
    return `${ind}${type} ${f.name} = ${f.number}${fieldOptions(f)};`;
  };
  const oneofsDone = new Set<number>();
  for (const f of m.field ?? []) {
    if (f.oneofIndex === undefined) {
      out.push(fieldLine(f, inner));
      continue;
    }
    if (oneofsDone.has(f.oneofIndex)) continue;
    oneofsDone.add(f.oneofIndex);
    out.push(`${inner}oneof ${m.oneofDecl?.[f.oneofIndex]?.name ?? ''} {`);
    for (const g of m.field ?? []) if (g.oneofIndex === f.oneofIndex) out.push(fieldLine(g, `${inner}  `));
    out.push(`${inner}}`);
  }
  for (const e of m.enumType ?? []) emitEnum(e, inner, out);
  for (const n of m.nestedType ?? []) if (!n.options?.mapEntry) emitMessage(pkg, n, inner, out);
  out.push(`${indent}}`);
}

/** The proto3 text of a decoded descriptor, in the descriptor's order. */
export function protoText(fd: FileDesc, header: string): string {
  const out: string[] = [header, `syntax = "${fd.syntax ?? 'proto2'}";`, '', `package ${fd.package};`, ''];
  for (const dep of fd.dependency ?? []) out.push(`import "${dep}";`);
  out.push('');
  for (const [k, v] of Object.entries(fd.options ?? {})) {
    if (k !== 'goPackage') throw new Error(`file option ${k} is not supported`);
    out.push(`option go_package = ${JSON.stringify(v)};`, '');
  }
  for (const ext of fd.extension ?? []) {
    out.push(`extend ${typeRef(fd.package, ext.extendee ?? '')} {`);
    out.push(`  ${SCALARS[ext.type] ?? ''} ${ext.name} = ${ext.number};`, '}', '');
  }
  for (const s of fd.service ?? []) {
    out.push(`service ${s.name} {`);
    for (const mth of s.method) {
      unsupported('method options', mth.name, mth.options);
      const req = `${mth.clientStreaming ? 'stream ' : ''}${typeRef(fd.package, mth.inputType)}`;
      const res = `${mth.serverStreaming ? 'stream ' : ''}${typeRef(fd.package, mth.outputType)}`;
      out.push(`  rpc ${mth.name} (${req}) returns (${res}) {}`);
    }
    out.push('}', '');
  }
  for (const e of fd.enumType ?? []) {
    emitEnum(e, '', out);
    out.push('');
  }
  for (const m of fd.messageType ?? []) {
    emitMessage(fd.package, m, '', out);
    out.push('');
  }
  return `${out.join('\n').trimEnd()}\n`;
}

const HEADER = `// GENERATED by scripts/csi-proto.ts: do not edit.
// The Container Storage Interface spec v1.2.0 (github.com/container-storage-interface/spec,
// Apache-2.0), as vendored by Kubernetes v1.20.2 (vendor/modules.txt), regenerated from the gzipped
// FileDescriptorProto embedded in ${CSI_PB_GO}.
// The spec's comments are not in the descriptor; read them in the spec's csi.proto / spec.md.
`;

/** The csi.proto text for a Kubernetes source tree. */
export function generateCsiProto(kubernetesSrc: string): string {
  const go = fs.readFileSync(path.join(kubernetesSrc, CSI_PB_GO), 'utf8');
  return protoText(decodeFile(embeddedDescriptor(go)), HEADER);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const text = generateCsiProto(process.argv[2] ?? BED_KUBERNETES_SRC);
  const current = fs.existsSync(CSI_PROTO_OUT) ? fs.readFileSync(CSI_PROTO_OUT, 'utf8') : '';
  if (current !== text) {
    fs.writeFileSync(CSI_PROTO_OUT, text);
    console.log(`wrote ${CSI_PROTO_OUT}`);
  }
}
