// node-thrift-hbase (npm) against Basalt's Thrift2 gateway: create, put,
// get, scan, delete, checkAndPut and increment. Run by
// scripts/thrift2-client-suite, which installs the packages and starts the
// server; BASALT_THRIFT2_PORT says where it listens.
'use strict';

const assert = require('assert');
const net = require('net');
const HBase = require('node-thrift-hbase');

const config = { host: '127.0.0.1', port: Number(process.env.BASALT_THRIFT2_PORT) };
const TABLE = 'node_t2';

// Each call of the package's wrapper ends its connection: one client each.
const client = () => HBase.client(config);
const call = (name, ...args) =>
  new Promise((resolve, reject) =>
    client()[name](TABLE, ...args, (err, data) => (err ? reject(new Error(String(err))) : resolve(data))));

// ---- createTable: the package's IDL has no admin methods, so this one
// call is written by hand in the strict binary protocol (buffered). ----
function str(s) {
  const b = Buffer.from(s);
  const len = Buffer.alloc(4);
  len.writeInt32BE(b.length);
  return Buffer.concat([len, b]);
}
const field = (type, id) => Buffer.from([type, id >> 8, id & 0xff]);
const STOP = Buffer.from([0]);

function createTableCall(table, family) {
  const head = Buffer.alloc(4);
  head.writeUInt32BE(0x80010001); // version 1, CALL
  const seq = Buffer.alloc(4);
  seq.writeInt32BE(1);
  const count = Buffer.alloc(4);
  count.writeInt32BE(1);
  return Buffer.concat([
    head, str('createTable'), seq,
    field(12, 1), // desc: TTableDescriptor
    field(12, 1), // tableName: TTableName
    field(11, 1), str('default'), field(11, 2), str(table), STOP,
    field(15, 2), Buffer.from([12]), count, // columns: list<TColumnFamilyDescriptor>
    field(11, 1), str(family), STOP,
    STOP, // desc
    STOP, // arguments
  ]);
}

function createTable(table, family) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(config.port, config.host, () => socket.write(createTableCall(table, family)));
    let reply = Buffer.alloc(0);
    socket.on('data', (d) => {
      reply = Buffer.concat([reply, d]);
      // Header: 4 (version/type) + 4 + name + 4 (seqid), then the result
      // struct; a void success is a lone stop byte.
      const nameLen = reply.length >= 8 ? reply.readInt32BE(4) : -1;
      const body = 12 + nameLen;
      if (nameLen < 0 || reply.length <= body) return;
      socket.end();
      const type = reply.readUInt32BE(0) & 0xff;
      if (type === 2 && reply[body] === 0) resolve();
      else reject(new Error('createTable failed: ' + reply.slice(body).toString('latin1')));
    });
    socket.on('error', reject);
  });
}

const cellsOf = (result) =>
  (result.columnValues || []).map((c) => [c.family.toString() + ':' + c.qualifier.toString(), c.value]);

async function main() {
  await createTable(TABLE, 'cf');

  // put, get
  const c = client();
  const put = c.Put('row1');
  put.add('cf', 'name', 'basalt');
  put.add('cf', 'kind', 'db');
  await call('put', put);
  const get = client().Get('row1');
  const row = await call('get', get);
  assert.strictEqual(row.row.toString(), 'row1');
  assert.deepStrictEqual(
    cellsOf(row).map(([k, v]) => [k, v.toString()]),
    [['cf:kind', 'db'], ['cf:name', 'basalt']],
  );

  // scan
  for (const r of ['row2', 'row3']) {
    const p = client().Put(r);
    p.add('cf', 'name', r);
    await call('put', p);
  }
  const scan = client().Scan();
  scan.addStartRow('row1');
  scan.addStopRow('row3');
  scan.addNumRows(10);
  const rows = await call('scan', scan);
  assert.deepStrictEqual(rows.map((r) => r.row.toString()), ['row1', 'row2']);

  // delete
  const del = client().Del('row2');
  del.addFamily('cf');
  await call('del', del);
  const gone = await call('get', client().Get('row2'));
  assert.strictEqual(cellsOf(gone).length, 0);

  // checkAndPut, through the generated client the package hands out
  const HBaseTypes = require('node-thrift-hbase/gen-nodejs/hbase_types');
  const checkAndPut = (expected, value) =>
    new Promise((resolve, reject) => {
      const wrapper = client();
      wrapper.getClient((err, raw) => {
        if (err) return reject(new Error(String(raw)));
        const tput = new HBaseTypes.TPut({
          row: 'row1',
          columnValues: [new HBaseTypes.TColumnValue({ family: 'cf', qualifier: 'name', value })],
        });
        raw.checkAndPut(TABLE, 'row1', 'cf', 'name', expected, tput, (e, applied) => {
          wrapper.connection.end();
          return e ? reject(e) : resolve(applied);
        });
      });
    });
  assert.strictEqual(await checkAndPut('not-it', 'x'), false);
  assert.strictEqual(await checkAndPut('basalt', 'basalt2'), true);
  const after = await call('get', client().Get('row1'));
  assert.deepStrictEqual(
    cellsOf(after).map(([k, v]) => [k, v.toString()]),
    [['cf:kind', 'db'], ['cf:name', 'basalt2']],
  );

  // increment (the package's Inc adds 1)
  for (let i = 0; i < 3; i++) {
    const inc = client().Inc('counter');
    inc.add('cf', 'hits');
    await call('inc', inc);
  }
  const counter = await call('get', client().Get('counter'));
  const [[name, value]] = cellsOf(counter);
  assert.strictEqual(name, 'cf:hits');
  // thrift 0.9.1 hands binary fields back as latin1 strings.
  const bytes = Buffer.isBuffer(value) ? value : Buffer.from(value, 'latin1');
  assert.strictEqual(bytes.length, 8);
  assert.strictEqual(bytes.readBigInt64BE(0), 3n);

  console.log('node-thrift-hbase: create, put, get, scan, delete, checkAndPut, increment passed');
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
