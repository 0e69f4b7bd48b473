#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tiny_stack::Op;

#[derive(Arbitrary, Debug)]
enum FuzzOp {
    Push(u8),
    Add,
    Pop,
}

fuzz_target!(|ops: Vec<FuzzOp>| {
    let ops: Vec<Op> = ops
        .iter()
        .map(|op| match *op {
            FuzzOp::Push(v) => Op::Push(v),
            FuzzOp::Add => Op::Add,
            FuzzOp::Pop => Op::Pop,
        })
        .collect();
    let _ = tiny_stack::execute(&ops);
});
