// An LLVM pass plugin that labelfuzz-cc loads (-fpass-plugin) in fuzzing builds: it undoes the
// folding of `a || b` and `a && b` into one branch that LLVM's loop canonicalization does
// whatever the folding thresholds say (LoopSimplify merges a loop's exit conditions without
// asking for their cost), so that each condition is a branch again, and an edge of its own, when
// SanitizerCoverage runs after it. `while (*p++ != 0 && p != end)` is the example: folded, an
// input whose string runs to the end of the buffer shows no edge the terminated one does not.
//
// A conditional branch on a logical or (`select i1 a, true, b` or `or i1 a, b`) becomes a
// branch on `a` to the taken side, else to a new block that branches on `b`; an and the same
// way round. `b` is already computed before the branch (the folding speculated it), so nothing
// moves: the pass only adds the branch back.
//
// A value chosen by a condition (`x = c ? y : z`, which clang emits as a select, and the
// `llvm.umin`-style intrinsics a `MIN()` becomes) has no branch either: the select becomes a
// branch on `c` to two empty blocks that meet again, the intrinsic a comparison and such a
// branch, so each side is an edge. `y` and `z` stay where they were computed.

#include <optional>

#include "llvm/IR/Function.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/PassManager.h"
#include "llvm/IR/PatternMatch.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"

using namespace llvm;
using namespace llvm::PatternMatch;

namespace {

// Splits one branch on a logical or/and; returns the two branches that replace it (either may
// branch on a folded condition again), or nothing when the branch is not one.
SmallVector<BranchInst *, 2> unfold(BranchInst *branch) {
  if (!branch->isConditional())
    return {};
  auto *condition = dyn_cast<Instruction>(branch->getCondition());
  if (!condition || !condition->getType()->isIntegerTy(1) || !condition->hasOneUse() ||
      condition->getParent() != branch->getParent())
    return {};
  Value *first = nullptr, *second = nullptr;
  bool is_or;
  if (match(condition, m_LogicalOr(m_Value(first), m_Value(second))))
    is_or = true;
  else if (match(condition, m_LogicalAnd(m_Value(first), m_Value(second))))
    is_or = false;
  else
    return {};
  BasicBlock *block = branch->getParent();
  BasicBlock *taken = branch->getSuccessor(0);
  BasicBlock *not_taken = branch->getSuccessor(1);
  // A loop of one block (the branch back to itself) unfolds the same way: the new block
  // takes over the back edge on the side it decides.
  if (taken == not_taken)
    return {};
  // For an or, a true first condition decides (to `taken`); for an and, a false one (to
  // `not_taken`). The other way, the second condition decides.
  BasicBlock *decided = is_or ? taken : not_taken;
  BasicBlock *undecided = is_or ? not_taken : taken;
  Function *function = block->getParent();
  BasicBlock *second_test =
      BasicBlock::Create(function->getContext(), "labelfuzz.condition", function,
                         undecided);
  BranchInst *second_branch = BranchInst::Create(taken, not_taken, second, second_test);
  second_branch->setDebugLoc(branch->getDebugLoc());
  // `decided` keeps `block` as a predecessor and gains `second_test`; `undecided` is reached
  // from `second_test` only. The values flowing in are the ones that flowed from `block`.
  for (PHINode &phi : decided->phis())
    phi.addIncoming(phi.getIncomingValueForBlock(block), second_test);
  for (PHINode &phi : undecided->phis())
    phi.replaceIncomingBlockWith(block, second_test);
  IRBuilder<> builder(branch);
  BranchInst *first_branch = is_or ? builder.CreateCondBr(first, taken, second_test)
                                   : builder.CreateCondBr(first, second_test, not_taken);
  first_branch->setDebugLoc(branch->getDebugLoc());
  branch->eraseFromParent();
  if (condition->use_empty())
    condition->eraseFromParent();
  return {first_branch, second_branch};
}

// The comparison a min/max intrinsic stands for (its first operand chosen when true), or
// nothing for any other instruction.
std::optional<CmpInst::Predicate> min_max_predicate(Instruction &instruction) {
  auto *intrinsic = dyn_cast<IntrinsicInst>(&instruction);
  if (!intrinsic || intrinsic->getType()->isVectorTy())
    return std::nullopt;
  switch (intrinsic->getIntrinsicID()) {
  case Intrinsic::umin:
    return CmpInst::ICMP_ULT;
  case Intrinsic::umax:
    return CmpInst::ICMP_UGT;
  case Intrinsic::smin:
    return CmpInst::ICMP_SLT;
  case Intrinsic::smax:
    return CmpInst::ICMP_SGT;
  default:
    return std::nullopt;
  }
}

// Replaces `chosen` (a select or a min/max) by a branch on `condition` to two empty blocks,
// and a phi where they meet that takes `if_true` or `if_false`.
void branch_on_choice(Instruction *chosen, Value *condition, Value *if_true, Value *if_false) {
  BasicBlock *head = chosen->getParent();
  Instruction *then_end = nullptr, *else_end = nullptr;
  SplitBlockAndInsertIfThenElse(condition, chosen->getIterator(), &then_end, &else_end);
  // `head` now ends in the new branch; `chosen` starts the block where the two sides meet.
  head->getTerminator()->setDebugLoc(chosen->getDebugLoc());
  PHINode *phi =
      PHINode::Create(chosen->getType(), 2, chosen->getName(), chosen->getParent()->begin());
  phi->addIncoming(if_true, then_end->getParent());
  phi->addIncoming(if_false, else_end->getParent());
  phi->setDebugLoc(chosen->getDebugLoc());
  chosen->replaceAllUsesWith(phi);
  chosen->eraseFromParent();
}

// Turns every scalar select and min/max into a branch; returns whether there was one.
bool branch_on_choices(Function &function) {
  SmallVector<Instruction *, 32> choices;
  for (BasicBlock &block : function)
    for (Instruction &instruction : block)
      if ((isa<SelectInst>(instruction) &&
           !instruction.getOperand(0)->getType()->isVectorTy()) ||
          min_max_predicate(instruction))
        choices.push_back(&instruction);
  for (Instruction *chosen : choices) {
    if (auto *select = dyn_cast<SelectInst>(chosen)) {
      branch_on_choice(select, select->getCondition(), select->getTrueValue(),
                       select->getFalseValue());
      continue;
    }
    Value *first = chosen->getOperand(0), *second = chosen->getOperand(1);
    auto *comparison = new ICmpInst(chosen->getIterator(), *min_max_predicate(*chosen), first,
                                    second, "labelfuzz.choice");
    comparison->setDebugLoc(chosen->getDebugLoc());
    branch_on_choice(chosen, comparison, first, second);
  }
  return !choices.empty();
}

struct UnfoldConditions : PassInfoMixin<UnfoldConditions> {
  PreservedAnalyses run(Function &function, FunctionAnalysisManager &) {
    SmallVector<BranchInst *, 32> work;
    for (BasicBlock &block : function)
      if (auto *branch = dyn_cast<BranchInst>(block.getTerminator()))
        work.push_back(branch);
    bool changed = false;
    while (!work.empty()) {
      auto replaced = unfold(work.pop_back_val());
      changed |= !replaced.empty();
      work.append(replaced.begin(), replaced.end());
    }
    changed |= branch_on_choices(function);
    return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
  }
  static bool isRequired() { return true; }
};

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "labelfuzz-unfold-conditions", "1", [](PassBuilder &builder) {
            // Registered before clang registers SanitizerCoverage at the same point, so it runs
            // first: the branches it adds are instrumented.
            builder.registerOptimizerLastEPCallback(
                [](ModulePassManager &passes, OptimizationLevel) {
                  passes.addPass(createModuleToFunctionPassAdaptor(UnfoldConditions()));
                });
          }};
}
