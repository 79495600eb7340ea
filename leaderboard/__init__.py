"""The xla-v0 op-count leaderboard: an evaluation harness and agents.

Shaped like CompilerGym's LLVM leaderboard (``compiler_gym.leaderboard.llvm_instcount``).
"""
