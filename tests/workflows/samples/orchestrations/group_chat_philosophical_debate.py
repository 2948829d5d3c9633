"""Port of MAF's ``samples/03-workflows/orchestrations/group_chat_philosophical_debate.py``.

A moderator agent guides eight participants through a discussion, picking each next speaker
with an ``AgentOrchestrationOutput``; the chat ends on the termination condition, once ten
assistant messages are in the conversation, with the orchestrator's termination message as the
workflow's output. Every turn streams as an intermediate output.

The moderator's picks and every participant's words are scripted (``SCRIPTS``). The sample
passes ``intermediate_output_from=["all"]``: MAF 1.23 reads that list as a participant named
"all" and refuses it, so the port passes the literal ``"all"``, which selects every participant.
"""

import asyncio
import logging
from typing import cast

from agent_framework import (
    Agent,
    AgentResponseUpdate,
    Message,
)

from workflows.agents.local_chat import ScriptedChatClient
from workflows.orchestrations import GroupChatBuilder

logging.basicConfig(level=logging.WARNING)


def _pick(speaker: str) -> dict[str, object]:
    return {
        "terminate": False,
        "reason": f"{speaker} can answer the last point.",
        "next_speaker": speaker,
        "final_message": None,
    }


# Who speaks, in order: ten turns, after which the termination condition ends the debate.
ORDER = [
    "Farmer",
    "Developer",
    "SpiritualLeader",
    "Activist",
    "Teacher",
    "Artist",
    "Immigrant",
    "Doctor",
    "Farmer",
    "Developer",
]

SCRIPTS: dict[str, list[object]] = {
    "Moderator": [_pick(speaker) for speaker in ORDER],
    "Farmer": [
        "A good life follows the rhythm of the land and the family around the table.",
        "Progress is welcome when it does not cut us off from the soil and each other.",
    ],
    "Developer": [
        "For me it is freedom to build useful things and still log off for dinner.",
        "Maybe technology is good when it gives us back the time the Farmer talks about.",
    ],
    "Teacher": ["History teaches that dignity and liberty are the ground of any good life."],
    "Activist": ["A good life is shared: justice for people and for the rivers we depend on."],
    "SpiritualLeader": ["Happiness grows from serving others with compassion and humility."],
    "Artist": ["Our stories carry memory; a good life adds a verse to the song of the people."],
    "Immigrant": ["I balance two cultures; a good life is the courage to risk for the family."],
    "Doctor": ["Health and fair systems let everyone pursue their own idea of a good life."],
}


def _get_chat_client(agent_name: str) -> ScriptedChatClient:
    return ScriptedChatClient(SCRIPTS[agent_name], name=f"{agent_name.lower()}-model")


async def main() -> None:
    # Create debate moderator with structured output for speaker selection
    # Note: Participant names and descriptions are automatically injected by the orchestrator
    moderator = Agent(
        name="Moderator",
        description="Guides philosophical discussion by selecting next speaker",
        instructions="""
You are a thoughtful moderator guiding a philosophical discussion on the topic handed to you
by the user.

Your participants bring diverse global perspectives. Select speakers strategically to:
- Create natural conversation flow and responses to previous points
- Ensure all voices are heard throughout the discussion
- Build on themes and contrasts that emerge
- Allow for respectful challenges and counterpoints
- Guide toward meaningful conclusions

Select speakers who can:
1. Respond directly to points just made
2. Introduce fresh perspectives when needed
3. Bridge or contrast different viewpoints
4. Deepen the philosophical exploration

Finish when:
- Multiple rounds have occurred (at least 6-8 exchanges)
- Key themes have been explored from different angles
- Natural conclusion or synthesis has emerged
- Diminishing returns in new insights

In your final_message, provide a brief synthesis highlighting key themes that emerged.
""",
        client=_get_chat_client("Moderator"),
    )

    farmer = Agent(
        name="Farmer",
        description="A rural farmer from Southeast Asia",
        instructions="""
You're a farmer from Southeast Asia. Your life is deeply connected to land and family.
You value tradition and sustainability. You are in a philosophical debate.

Share your perspective authentically. Feel free to:
- Challenge other participants respectfully
- Build on points others have made
- Use concrete examples from your experience
- Keep responses thoughtful but concise (2-4 sentences)
""",
        client=_get_chat_client("Farmer"),
    )

    developer = Agent(
        name="Developer",
        description="An urban software developer from the United States",
        instructions="""
You're a software developer from the United States. Your life is fast-paced and technology-driven.
You value innovation, freedom, and work-life balance. You are in a philosophical debate.

Share your perspective authentically. Feel free to:
- Challenge other participants respectfully
- Build on points others have made
- Use concrete examples from your experience
- Keep responses thoughtful but concise (2-4 sentences)
""",
        client=_get_chat_client("Developer"),
    )

    teacher = Agent(
        name="Teacher",
        description="A retired history teacher from Eastern Europe",
        instructions="""
You're a retired history teacher from Eastern Europe. You bring historical and philosophical
perspectives to discussions. You value legacy, learning, and cultural continuity.
You are in a philosophical debate.

Share your perspective authentically. Feel free to:
- Challenge other participants respectfully
- Build on points others have made
- Use concrete examples from history or your teaching experience
- Keep responses thoughtful but concise (2-4 sentences)
""",
        client=_get_chat_client("Teacher"),
    )

    activist = Agent(
        name="Activist",
        description="A young activist from South America",
        instructions="""
You're a young activist from South America. You focus on social justice, environmental rights,
and generational change. You are in a philosophical debate.

Share your perspective authentically. Feel free to:
- Challenge other participants respectfully
- Build on points others have made
- Use concrete examples from your activism
- Keep responses thoughtful but concise (2-4 sentences)
""",
        client=_get_chat_client("Activist"),
    )

    spiritual_leader = Agent(
        name="SpiritualLeader",
        description="A spiritual leader from the Middle East",
        instructions="""
You're a spiritual leader from the Middle East. You provide insights grounded in religion,
morality, and community service. You are in a philosophical debate.

Share your perspective authentically. Feel free to:
- Challenge other participants respectfully
- Build on points others have made
- Use examples from spiritual teachings or community work
- Keep responses thoughtful but concise (2-4 sentences)
""",
        client=_get_chat_client("SpiritualLeader"),
    )

    artist = Agent(
        name="Artist",
        description="An artist from Africa",
        instructions="""
You're an artist from Africa. You view life through creative expression, storytelling,
and collective memory. You are in a philosophical debate.

Share your perspective authentically. Feel free to:
- Challenge other participants respectfully
- Build on points others have made
- Use examples from your art or cultural traditions
- Keep responses thoughtful but concise (2-4 sentences)
""",
        client=_get_chat_client("Artist"),
    )

    immigrant = Agent(
        name="Immigrant",
        description="An immigrant entrepreneur from Asia living in Canada",
        instructions="""
You're an immigrant entrepreneur from Asia living in Canada. You balance tradition with adaptation.
You focus on family success, risk, and opportunity. You are in a philosophical debate.

Share your perspective authentically. Feel free to:
- Challenge other participants respectfully
- Build on points others have made
- Use examples from your immigrant and entrepreneurial journey
- Keep responses thoughtful but concise (2-4 sentences)
""",
        client=_get_chat_client("Immigrant"),
    )

    doctor = Agent(
        name="Doctor",
        description="A doctor from Scandinavia",
        instructions="""
You're a doctor from Scandinavia. Your perspective is shaped by public health, equity,
and structured societal support. You are in a philosophical debate.

Share your perspective authentically. Feel free to:
- Challenge other participants respectfully
- Build on points others have made
- Use examples from healthcare and societal systems
- Keep responses thoughtful but concise (2-4 sentences)
""",
        client=_get_chat_client("Doctor"),
    )

    # termination_condition: stop after 10 assistant messages
    # Mark participant responses as intermediate so the stream shows the
    # conversation as it unfolds while the orchestrator's transcript remains the
    # terminal workflow output.
    workflow = (
        GroupChatBuilder(
            participants=[
                farmer,
                developer,
                teacher,
                activist,
                spiritual_leader,
                artist,
                immigrant,
                doctor,
            ],
            termination_condition=lambda messages: (
                sum(1 for msg in messages if msg.role == "assistant") >= 10
            ),
            intermediate_output_from="all",
            orchestrator_agent=moderator,
        )
        .with_termination_condition(
            lambda messages: sum(1 for msg in messages if msg.role == "assistant") >= 10
        )
        .build()
    )

    topic = "What does a good life mean to you personally?"

    print("\n" + "=" * 80)
    print("PHILOSOPHICAL DEBATE: Perspectives on a Good Life")
    print("=" * 80)
    print(f"\nTopic: {topic}")
    print("\nParticipants:")
    print("  - Farmer (Southeast Asia)")
    print("  - Developer (United States)")
    print("  - Teacher (Eastern Europe)")
    print("  - Activist (South America)")
    print("  - SpiritualLeader (Middle East)")
    print("  - Artist (Africa)")
    print("  - Immigrant (Asia → Canada)")
    print("  - Doctor (Scandinavia)")
    print("\n" + "=" * 80)
    print("DISCUSSION BEGINS")
    print("=" * 80 + "\n")

    # Keep track of the last response to format output nicely in streaming mode
    last_response_id: str | None = None
    async for event in workflow.run(f"Please begin the discussion on: {topic}", stream=True):
        if event.type in ("intermediate", "output"):
            data = event.data
            if isinstance(data, AgentResponseUpdate):
                rid = data.response_id
                if rid != last_response_id:
                    if last_response_id is not None:
                        print("\n")
                    print(f"{data.author_name}:", end=" ", flush=True)
                    last_response_id = rid
                print(data.text, end="", flush=True)
            elif event.type == "output":
                # The output of the group chat workflow is a collection of chat messages from all
                # participants
                outputs = cast(list[Message], event.data)
                print("\n" + "=" * 80)
                print("\nFinal Conversation Transcript:\n")
                for message in outputs:
                    print(f"{message.author_name or message.role}: {message.text}\n")


if __name__ == "__main__":
    asyncio.run(main())
