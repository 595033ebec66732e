/**
 * TPC-C tables (spec clause 1.3, column names as BenchBase's tpcc DDL for PostgreSQL), with these changes:
 * - HISTORY gets a surrogate primary key h_id (identity) because every recorded table needs a key;
 * - no foreign keys (FK checks are reads the recorder cannot see, and ON DELETE CASCADE would change recorded
 *   rows behind its back);
 * - money and quantities are exact: numeric for money, int for counts (BenchBase's c_ytd_payment float is numeric);
 * - text columns are varchar (no char(n) padding);
 * - the PC variant (tpcc-pc) adds new_order.no_delivered (Delivery marks instead of deleting).
 */
import type { TableColumns } from '../lib/csv.js';

export const TPCC_TABLES = [
  'warehouse',
  'district',
  'customer',
  'history',
  'new_order',
  'oorder',
  'order_line',
  'item',
  'stock',
] as const;

const DIST_COLS = Array.from({ length: 10 }, (_, i) => `s_dist_${String(i + 1).padStart(2, '0')}`);

export function tpccColumns(pc: boolean): Record<string, TableColumns> {
  return {
    warehouse: [
      ['w_id', 'int'],
      ['w_ytd', 'numeric'],
      ['w_tax', 'numeric'],
      ['w_name', 'text'],
      ['w_street_1', 'text'],
      ['w_street_2', 'text'],
      ['w_city', 'text'],
      ['w_state', 'text'],
      ['w_zip', 'text'],
    ],
    district: [
      ['d_w_id', 'int'],
      ['d_id', 'int'],
      ['d_ytd', 'numeric'],
      ['d_tax', 'numeric'],
      ['d_next_o_id', 'int'],
      ['d_name', 'text'],
      ['d_street_1', 'text'],
      ['d_street_2', 'text'],
      ['d_city', 'text'],
      ['d_state', 'text'],
      ['d_zip', 'text'],
    ],
    customer: [
      ['c_w_id', 'int'],
      ['c_d_id', 'int'],
      ['c_id', 'int'],
      ['c_discount', 'numeric'],
      ['c_credit', 'text'],
      ['c_last', 'text'],
      ['c_first', 'text'],
      ['c_credit_lim', 'numeric'],
      ['c_balance', 'numeric'],
      ['c_ytd_payment', 'numeric'],
      ['c_payment_cnt', 'int'],
      ['c_delivery_cnt', 'int'],
      ['c_street_1', 'text'],
      ['c_street_2', 'text'],
      ['c_city', 'text'],
      ['c_state', 'text'],
      ['c_zip', 'text'],
      ['c_phone', 'text'],
      ['c_since', 'timestamp'],
      ['c_middle', 'text'],
      ['c_data', 'text'],
    ],
    history: [
      ['h_id', 'int'],
      ['h_c_id', 'int'],
      ['h_c_d_id', 'int'],
      ['h_c_w_id', 'int'],
      ['h_d_id', 'int'],
      ['h_w_id', 'int'],
      ['h_date', 'timestamp'],
      ['h_amount', 'numeric'],
      ['h_data', 'text'],
    ],
    new_order: pc
      ? [
          ['no_w_id', 'int'],
          ['no_d_id', 'int'],
          ['no_o_id', 'int'],
          ['no_delivered', 'bool'],
        ]
      : [
          ['no_w_id', 'int'],
          ['no_d_id', 'int'],
          ['no_o_id', 'int'],
        ],
    oorder: [
      ['o_w_id', 'int'],
      ['o_d_id', 'int'],
      ['o_id', 'int'],
      ['o_c_id', 'int'],
      ['o_carrier_id', 'int'],
      ['o_ol_cnt', 'int'],
      ['o_all_local', 'int'],
      ['o_entry_d', 'timestamp'],
    ],
    order_line: [
      ['ol_w_id', 'int'],
      ['ol_d_id', 'int'],
      ['ol_o_id', 'int'],
      ['ol_number', 'int'],
      ['ol_i_id', 'int'],
      ['ol_delivery_d', 'timestamp'],
      ['ol_amount', 'numeric'],
      ['ol_supply_w_id', 'int'],
      ['ol_quantity', 'int'],
      ['ol_dist_info', 'text'],
    ],
    item: [
      ['i_id', 'int'],
      ['i_name', 'text'],
      ['i_price', 'numeric'],
      ['i_data', 'text'],
      ['i_im_id', 'int'],
    ],
    stock: [
      ['s_w_id', 'int'],
      ['s_i_id', 'int'],
      ['s_quantity', 'int'],
      ['s_ytd', 'int'],
      ['s_order_cnt', 'int'],
      ['s_remote_cnt', 'int'],
      ['s_data', 'text'],
      ...DIST_COLS.map((c) => [c, 'text'] as const),
    ],
  };
}

export function tpccSchema(pc: boolean): string {
  return `
CREATE TABLE warehouse (
  w_id       int            NOT NULL,
  w_ytd      numeric(12, 2) NOT NULL,
  w_tax      numeric(4, 4)  NOT NULL,
  w_name     varchar(10)    NOT NULL,
  w_street_1 varchar(20)    NOT NULL,
  w_street_2 varchar(20)    NOT NULL,
  w_city     varchar(20)    NOT NULL,
  w_state    varchar(2)     NOT NULL,
  w_zip      varchar(9)     NOT NULL,
  PRIMARY KEY (w_id)
);
CREATE TABLE district (
  d_w_id      int            NOT NULL,
  d_id        int            NOT NULL,
  d_ytd       numeric(12, 2) NOT NULL,
  d_tax       numeric(4, 4)  NOT NULL,
  d_next_o_id int            NOT NULL,
  d_name      varchar(10)    NOT NULL,
  d_street_1  varchar(20)    NOT NULL,
  d_street_2  varchar(20)    NOT NULL,
  d_city      varchar(20)    NOT NULL,
  d_state     varchar(2)     NOT NULL,
  d_zip       varchar(9)     NOT NULL,
  PRIMARY KEY (d_w_id, d_id)
);
CREATE TABLE customer (
  c_w_id         int            NOT NULL,
  c_d_id         int            NOT NULL,
  c_id           int            NOT NULL,
  c_discount     numeric(4, 4)  NOT NULL,
  c_credit       varchar(2)     NOT NULL,
  c_last         varchar(16)    NOT NULL,
  c_first        varchar(16)    NOT NULL,
  c_credit_lim   numeric(12, 2) NOT NULL,
  c_balance      numeric(12, 2) NOT NULL,
  c_ytd_payment  numeric(12, 2) NOT NULL,
  c_payment_cnt  int            NOT NULL,
  c_delivery_cnt int            NOT NULL,
  c_street_1     varchar(20)    NOT NULL,
  c_street_2     varchar(20)    NOT NULL,
  c_city         varchar(20)    NOT NULL,
  c_state        varchar(2)     NOT NULL,
  c_zip          varchar(9)     NOT NULL,
  c_phone        varchar(16)    NOT NULL,
  c_since        timestamp      NOT NULL,
  c_middle       varchar(2)     NOT NULL,
  c_data         varchar(500)   NOT NULL,
  PRIMARY KEY (c_w_id, c_d_id, c_id)
);
CREATE INDEX idx_customer_name ON customer (c_w_id, c_d_id, c_last, c_first);
CREATE TABLE history (
  h_id     int GENERATED BY DEFAULT AS IDENTITY,
  h_c_id   int           NOT NULL,
  h_c_d_id int           NOT NULL,
  h_c_w_id int           NOT NULL,
  h_d_id   int           NOT NULL,
  h_w_id   int           NOT NULL,
  h_date   timestamp     NOT NULL,
  h_amount numeric(6, 2) NOT NULL,
  h_data   varchar(24)   NOT NULL,
  PRIMARY KEY (h_id)
);
CREATE TABLE new_order (
  no_w_id int NOT NULL,
  no_d_id int NOT NULL,
  no_o_id int NOT NULL,${pc ? '\n  no_delivered boolean NOT NULL DEFAULT false,' : ''}
  PRIMARY KEY (no_w_id, no_d_id, no_o_id)
);
CREATE TABLE oorder (
  o_w_id       int       NOT NULL,
  o_d_id       int       NOT NULL,
  o_id         int       NOT NULL,
  o_c_id       int       NOT NULL,
  o_carrier_id int       DEFAULT NULL,
  o_ol_cnt     int       NOT NULL,
  o_all_local  int       NOT NULL,
  o_entry_d    timestamp NOT NULL,
  PRIMARY KEY (o_w_id, o_d_id, o_id)
);
CREATE INDEX idx_order ON oorder (o_w_id, o_d_id, o_c_id, o_id);
CREATE TABLE order_line (
  ol_w_id        int           NOT NULL,
  ol_d_id        int           NOT NULL,
  ol_o_id        int           NOT NULL,
  ol_number      int           NOT NULL,
  ol_i_id        int           NOT NULL,
  ol_delivery_d  timestamp     NULL DEFAULT NULL,
  ol_amount      numeric(6, 2) NOT NULL,
  ol_supply_w_id int           NOT NULL,
  ol_quantity    int           NOT NULL,
  ol_dist_info   varchar(24)   NOT NULL,
  PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)
);
CREATE TABLE item (
  i_id    int           NOT NULL,
  i_name  varchar(24)   NOT NULL,
  i_price numeric(5, 2) NOT NULL,
  i_data  varchar(50)   NOT NULL,
  i_im_id int           NOT NULL,
  PRIMARY KEY (i_id)
);
CREATE TABLE stock (
  s_w_id       int         NOT NULL,
  s_i_id       int         NOT NULL,
  s_quantity   int         NOT NULL,
  s_ytd        int         NOT NULL,
  s_order_cnt  int         NOT NULL,
  s_remote_cnt int         NOT NULL,
  s_data       varchar(50) NOT NULL,
${DIST_COLS.map((c) => `  ${c}    varchar(24) NOT NULL,`).join('\n')}
  PRIMARY KEY (s_w_id, s_i_id)
);
`;
}
