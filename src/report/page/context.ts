/**
 * What the parts of the page script share (types only). The script is one function per file, each taking what it
 * needs as arguments: page-script.ts puts their compiled text together into one inline script, so no part may
 * import another at run time (only `import type`; test/report.test.ts checks it).
 */
import type { PageAnomaly, PageData, PageTxn } from '../page-data.js';

export interface SelectOptions {
  /** Zoom or pan the timeline so that the transaction's bar shows. */
  reveal?: boolean;
  /** Scroll the page to the timeline. */
  scroll?: boolean;
}

/** Small DOM helpers (dom.ts). Every text goes in through textContent, never as HTML. */
export interface Dom {
  el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string | null, text?: unknown): HTMLElementTagNameMap[K];
  add<K extends keyof HTMLElementTagNameMap>(
    parent: Element,
    tag: K,
    cls?: string | null,
    text?: unknown,
  ): HTMLElementTagNameMap[K];
  text(parent: Element, text: string): void;
  json(v: unknown): string;
  plural(n: number, word: string): string;
  /** A level as a coloured chip. */
  chip(level: string, text?: string): HTMLElement;
  /** A transaction id that selects it when clicked (plain text when it is not in the history). */
  txnLink(id: string): HTMLElement;
  /** A time (recorded histories) or a position (file order) on the timeline. */
  fmtTime(v: number): string;
}

export interface PageContext {
  data: PageData;
  txns: PageTxn[];
  /** Transaction id -> index in txns. */
  idIndex: Map<string, number>;
  /** Indices of the transactions in the drawn anomalies. */
  highlighted: Set<number>;
  /** Index -> position (1-based) in the witness commit order. */
  orderRank: Map<number, number> | null;
  dom: Dom;
  /** Selects a transaction: outlined on the timeline, its statements in the details panel. */
  select(i: number, opts?: SelectOptions): void;
}

/** An explanation renderer (explanations.ts): used for the page's anomalies and for each level's. */
export interface Explanations {
  /** One anomaly as a section: heading, message, graphs with the steps in words, transactions, terminal text. */
  anomaly(parent: Element, a: PageAnomaly, id: string): HTMLElement;
  /** Sizes the graphs to the page (after layout, and on resize). */
  fit(): void;
  /** How many drawn edges have their step in words linked (for tests). */
  linkedEdges(): number;
}

/** The timeline (timeline.ts). */
export interface Timeline {
  draw(): void;
  fit(): void;
  zoomTo(indices: number[]): void;
  reveal(i: number): void;
  resize(): void;
  /** The selected transaction (-1: none). */
  selected: number;
  /** The element to scroll to. */
  element: HTMLElement;
  /** The details panel beside it (details.ts fills it). */
  panel: HTMLElement;
  /** A transaction's bar in page coordinates (tests). */
  barOf(i: number): { x: number; y: number; width: number; height: number; cx: number; cy: number; visible: boolean };
  view(): { a: number; z: number };
}
