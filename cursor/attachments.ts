// What the user attached to a message (UserMessage.selected_context, docs/protocol/cursor-run.md §2.3, §8.8), mapped
// to neutral attachments in one fixed order, so the rendered runtime message is a pure function of the request. Parts
// that come by blob id are read through `blobText`; the caller fetched and verified them first.
import { type DescMessage, isFieldSet, type MessageShape, ScalarType } from "@bufbuild/protobuf";
import {
  type LsDirectoryTreeNode,
  type Range,
  SelectedContextSchema,
  type SelectedImage,
  type UserMessage,
  UserMessageSchema,
} from "../proto/gen/agent/v1/agent_pb.js";

/** One rendered block: `<tag attr="…">body</tag>`; attribute order is part of the layout. */
export interface TextAttachment {
  tag: string;
  attrs: Array<[string, string]>;
  body?: string;
}

/** An image the user attached; providers take these as image parts, never as text. */
export interface ImageAttachment {
  mimeType: string;
  path: string;
  data?: Uint8Array;
  blobId?: Uint8Array;
}

/** The selected_context fields rendered as text (their order is the layout's order); images are collected apart. */
const RENDERED = [
  "files",
  "folders",
  "code_selections",
  "terminals",
  "terminal_selections",
  "git_diff",
  "git_diff_from_branch_to_main",
  "git_commits",
  "git_pr_diff_selections",
  "selected_pull_requests",
  "external_links",
  "documentations",
  "past_chats",
  "cursor_rules",
  "cursor_commands",
  "extra_context",
  "extra_context_entries",
] as const;

/** UserMessage fields the gateway reads; any other content-bearing field present is reported as unused. */
const USER_MESSAGE_USED = new Set(["text", "message_id", "selected_context", "mode", "text_blob_id"]);

/** Blob ids the attachments and the user's text refer to, in a fixed order; the run fetches the ones it lacks. */
export function referencedBlobs(m: UserMessage): Uint8Array[] {
  const c = m.selectedContext;
  const ids: Array<Uint8Array | undefined> = [
    m.textBlobId,
    ...(c?.extraContextEntries ?? []).map((e) => (e.dataOrBlobId.case === "blobId" ? e.dataOrBlobId.value : undefined)),
    ...(c?.externalLinks ?? []).map((l) => (l.pdfContent === undefined ? l.blobId : undefined)),
    ...(c?.gitPrDiffSelections ?? []).map((d) => (d.diffContent === undefined ? d.blobId : undefined)),
    ...(c?.selectedPullRequests ?? []).map((p) => p.blobId),
  ];
  return ids.filter((id): id is Uint8Array => id !== undefined && id.byteLength > 0);
}

export function selectedImages(m: UserMessage): ImageAttachment[] {
  return (m.selectedContext?.selectedImages ?? []).map(image);
}

/** Blob ids of attached images sent without their bytes; the run fetches the ones it lacks. */
export function imageBlobs(m: UserMessage): Uint8Array[] {
  return selectedImages(m).flatMap((i) => (i.data === undefined && i.blobId?.byteLength ? [i.blobId] : []));
}

function image(i: SelectedImage): ImageAttachment {
  const d = i.dataOrBlobId;
  const data = d.case === "data" ? d.value : d.case === "blobIdWithData" ? d.value.data : undefined;
  const blobId = d.case === "blobId" ? d.value : d.case === "blobIdWithData" ? d.value.blobId : undefined;
  return { mimeType: i.mimeType, path: i.path, ...(data ? { data } : {}), ...(blobId ? { blobId } : {}) };
}

/** The user's query: the full text by blob when the client sent it that way, else the inline text. */
export function userQuery(m: UserMessage, blobText: (id: Uint8Array) => string): string {
  return m.textBlobId?.byteLength ? blobText(m.textBlobId) : m.text;
}

export function textAttachments(m: UserMessage, blobText: (id: Uint8Array) => string): TextAttachment[] {
  const c = m.selectedContext;
  if (!c) return [];
  const out: TextAttachment[] = [];
  const add = (tag: string, attrs: Array<[string, string | undefined]>, body?: string) => {
    const kept = attrs.filter((a): a is [string, string] => a[1] !== undefined && a[1] !== "");
    out.push({ tag, attrs: kept, ...(body ? { body } : {}) });
  };
  for (const f of c.files) add("file", [["path", f.relativePath || f.path]], f.content);
  for (const f of c.folders)
    add("folder", [["path", f.relativePath || f.path]], f.directoryTree && tree(f.directoryTree));
  for (const s of c.codeSelections)
    add(
      "code_selection",
      [
        ["path", s.relativePath || s.path],
        ["lines", lines(s.range)],
      ],
      s.content,
    );
  for (const t of c.terminals)
    add(
      "terminal",
      [
        ["title", t.title],
        ["path", t.path],
      ],
      t.content,
    );
  for (const t of c.terminalSelections)
    add(
      "terminal_selection",
      [
        ["title", t.title],
        ["path", t.path],
        ["lines", lines(t.range)],
      ],
      t.content,
    );
  if (c.gitDiff) add("git_diff", [["of", "working tree"]], c.gitDiff.content);
  if (c.gitDiffFromBranchToMain) add("git_diff", [["of", "branch against main"]], c.gitDiffFromBranchToMain.content);
  for (const g of c.gitCommits)
    add("git_commit", [["sha", g.sha]], [g.message, g.description, g.diff].filter(Boolean).join("\n\n"));
  for (const d of c.gitPrDiffSelections) {
    const range = d.startLine || d.endLine ? `${d.startLine}-${d.endLine}` : undefined;
    const diff = d.diffContent ?? (d.blobId?.byteLength ? blobText(d.blobId) : undefined);
    add(
      "pr_diff",
      [
        ["url", d.prUrl],
        ["path", d.filePath],
        ["lines", range],
      ],
      diff,
    );
  }
  for (const p of c.selectedPullRequests) {
    const body = [p.description, p.blobId?.byteLength ? blobText(p.blobId) : undefined].filter(Boolean).join("\n\n");
    add(
      "pull_request",
      [
        ["number", String(p.number)],
        ["url", p.url],
        ["title", p.title],
      ],
      body,
    );
  }
  for (const l of c.externalLinks) {
    const body = l.pdfContent ?? (l.blobId?.byteLength ? blobText(l.blobId) : undefined);
    add(
      "link",
      [
        ["url", l.url],
        ["filename", l.filename],
      ],
      body,
    );
  }
  for (const d of c.documentations)
    add("documentation", [
      ["name", d.name],
      ["id", d.docId],
    ]);
  for (const p of c.pastChats)
    add("past_chat", [
      ["name", p.name],
      ["id", p.agentId],
    ]);
  for (const r of c.cursorRules) add("cursor_rule", [["path", r.rule?.fullPath]], r.rule?.content);
  for (const k of c.cursorCommands) add("cursor_command", [["name", k.name]], k.content);
  for (const x of c.extraContext) add("extra_context", [], x);
  for (const e of c.extraContextEntries) {
    const d = e.dataOrBlobId;
    add("extra_context", [], d.case === "data" ? d.value : d.case === "blobId" ? blobText(d.value) : undefined);
  }
  return out;
}

/** Field names of the message that carry something the gateway does not use yet, for one info log line. */
export function unusedContext(m: UserMessage): string[] {
  const unused = setFields(UserMessageSchema, m, (name) => !USER_MESSAGE_USED.has(name), "user_message");
  const c = m.selectedContext;
  if (!c) return unused;
  const known = new Set<string>([...RENDERED, "selected_images"]);
  return [...unused, ...setFields(SelectedContextSchema, c, (name) => !known.has(name), "selected_context")];
}

/** Set fields of `message` that `pick` selects (booleans are switches, not context), plus unknown field numbers. */
export function setFields<D extends DescMessage>(
  schema: D,
  message: MessageShape<D>,
  pick: (name: string) => boolean,
  prefix: string,
): string[] {
  const named = schema.fields
    .filter(
      (f) => pick(f.name) && !(f.fieldKind === "scalar" && f.scalar === ScalarType.BOOL) && isFieldSet(message, f),
    )
    .map((f) => `${prefix}.${f.name}`);
  const unknown = ((message as { $unknown?: Array<{ no: number }> }).$unknown ?? []).map((u) => `${prefix}.#${u.no}`);
  return [...named, ...new Set(unknown)];
}

/**
 * The layout of the selected_context section (docs/protocol/cursor-run.md §8.8): one block per attachment, in
 * RENDERED order, attributes JSON-quoted, the content verbatim between the tags.
 */
export function renderAttachments(list: readonly TextAttachment[]): string {
  return list
    .map((a) => {
      const open = [a.tag, ...a.attrs.map(([k, v]) => `${k}=${JSON.stringify(v)}`)].join(" ");
      return a.body === undefined ? `<${open} />` : `<${open}>\n${a.body.replace(/\n+$/, "")}\n</${a.tag}>`;
    })
    .join("\n");
}

const lines = (r: Range | undefined) => (r?.start && r.end ? `${r.start.line}-${r.end.line}` : undefined);

/** A folder as the client listed it: one path per line, directories ending in "/", depth-first. */
function tree(node: LsDirectoryTreeNode, depth = 0): string {
  const indent = "  ".repeat(depth);
  const name = depth === 0 ? node.absPath : node.absPath.split("/").pop();
  return [
    `${indent}${name}/`,
    ...node.childrenDirs.map((d) => tree(d, depth + 1)),
    ...node.childrenFiles.map((f) => `${indent}  ${f.name}`),
  ].join("\n");
}
