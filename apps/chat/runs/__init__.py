"""Autonomous runs: a task the model works on, round after round, in the background (issue 13).

A run executes on the chat's orchestrator loop (apps.chat.runtime), uses the same tool box
(apps.chat.tools) and model-round code (apps.chat.rounds) as a chat turn, and records one
`RunStep` per completed round, so a crash loses no completed work and `resume` continues from it.
"""
