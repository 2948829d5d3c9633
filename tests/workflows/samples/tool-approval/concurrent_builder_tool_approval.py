"""Port of MAF's ``samples/03-workflows/tool-approval/concurrent_builder_tool_approval.py``: two
trading agents run at once (``ConcurrentBuilder``) with the same tools; each reads market data
(no approval), then asks to trade and to set a stop-loss, both needing approval. The run pauses on
all four requests, the sample approves them, and the aggregated answers are printed.

Each agent gets its own ``ScriptedChatClient`` in place of the shared Foundry client, scripted
through data calls, two parallel approval-gated calls and a final answer. In MAF 1.23 the default
aggregator's output is an ``AgentResponse``, not a list of messages, so the port prints its
``messages``. The tools are ``async def`` here: MAF runs a sync tool in a worker thread, so two
agents calling tools at the same time would finish in an order the OS picks, and no two runs (on
either engine) could be compared event by event."""

import asyncio
from collections.abc import AsyncIterable
from typing import Annotated

from agent_framework import (
    Agent,
    AgentResponse,
    Content,
    Message,
    tool,
)

from workflows import WorkflowEvent
from workflows.agents.local_chat import ScriptedChatClient, ToolCall
from workflows.orchestrations import ConcurrentBuilder


# 1. Define market data tools (no approval required)
@tool(approval_mode="never_require")
async def get_stock_price(symbol: Annotated[str, "The stock ticker symbol"]) -> str:
    """Get the current stock price for a given symbol."""
    # Mock data for demonstration
    prices = {"AAPL": 175.50, "GOOGL": 140.25, "MSFT": 378.90, "AMZN": 178.75}
    price = prices.get(symbol.upper(), 100.00)
    return f"{symbol.upper()}: ${price:.2f}"


@tool(approval_mode="never_require")
async def get_market_sentiment(symbol: Annotated[str, "The stock ticker symbol"]) -> str:
    """Get market sentiment analysis for a stock."""
    # Mock sentiment data
    mock_data = {
        "AAPL": "Market sentiment for AAPL: Bullish (68% positive mentions in last 24h)",
        "GOOGL": "Market sentiment for GOOGL: Neutral (50% positive mentions in last 24h)",
        "MSFT": "Market sentiment for MSFT: Bullish (72% positive mentions in last 24h)",
        "AMZN": "Market sentiment for AMZN: Bearish (40% positive mentions in last 24h)",
    }
    return mock_data.get(symbol.upper(), f"Market sentiment for {symbol.upper()}: Unknown")


# 2. Define trading tools (approval required)
@tool(approval_mode="always_require")
async def execute_trade(
    symbol: Annotated[str, "The stock ticker symbol"],
    action: Annotated[str, "Either 'buy' or 'sell'"],
    quantity: Annotated[int, "Number of shares to trade"],
) -> str:
    """Execute a stock trade. Requires human approval due to financial impact."""
    return f"Trade executed: {action.upper()} {quantity} shares of {symbol.upper()}"


@tool(approval_mode="always_require")
async def set_stop_loss(
    symbol: Annotated[str, "The stock ticker symbol"],
    stop_price: Annotated[float, "The stop-loss price"],
) -> str:
    """Set a stop-loss order for a stock. Requires human approval due to financial impact."""
    return f"Stop-loss set for {symbol.upper()} at ${stop_price:.2f}"


@tool(approval_mode="never_require")
async def get_portfolio_balance() -> str:
    """Get current portfolio balance and available funds."""
    return "Portfolio: $50,000 invested, $10,000 cash available. Holdings: AAPL, GOOGL, MSFT."


def _print_output(event: WorkflowEvent) -> None:
    if not event.data:
        raise ValueError("WorkflowEvent has no data")

    if not isinstance(event.data, AgentResponse):
        raise TypeError("WorkflowEvent data is not an AgentResponse")

    messages: list[Message] = event.data.messages

    print("\n" + "-" * 60)
    print("Workflow completed. Aggregated results from both agents:")
    for msg in messages:
        if msg.text:
            print(f"- {msg.author_name or msg.role}: {msg.text}")


async def process_event_stream(stream: AsyncIterable[WorkflowEvent]) -> dict[str, Content] | None:
    """Process events from the workflow stream to capture human feedback requests."""
    requests: dict[str, Content] = {}
    async for event in stream:
        if event.type == "request_info" and isinstance(event.data, Content):
            # We are only expecting tool approval requests in this sample
            requests[event.request_id] = event.data
            if (
                event.data.type == "function_approval_request"
                and event.data.function_call is not None
            ):
                print(f"\nApproval requested for tool: {event.data.function_call.name}")
                print(f"Arguments: {event.data.function_call.arguments}")
        elif event.type == "output":
            _print_output(event)

    responses: dict[str, Content] = {}
    if requests:
        for request_id, request in requests.items():
            if request.type == "function_approval_request" and request.function_call is not None:
                print(f"\nSimulating human approval for: {request.function_call.name}")
                # Create approval response
                responses[request_id] = request.to_function_approval_response(approved=True)

    return responses if responses else None


def trader_client(symbol: str, quantity: int, stop_price: float) -> ScriptedChatClient:
    """A model that checks the data, asks to trade and set a stop-loss, then reports."""
    return ScriptedChatClient(
        [
            [
                ToolCall("get_stock_price", {"symbol": symbol}),
                ToolCall("get_market_sentiment", {"symbol": symbol}),
                ToolCall("get_portfolio_balance"),
            ],
            [
                ToolCall(
                    "execute_trade", {"symbol": symbol, "action": "buy", "quantity": quantity}
                ),
                ToolCall("set_stop_loss", {"symbol": symbol, "stop_price": stop_price}),
            ],
            f"I bought {quantity} shares of {symbol} and set a stop-loss at ${stop_price:.2f}.",
        ],
        name=f"{symbol.lower()}-model",
    )


async def main() -> None:
    # 3. Create two agents focused on different stocks but with the same tool sets
    microsoft_agent = Agent(
        client=trader_client("MSFT", 13, 340.0),
        name="MicrosoftAgent",
        instructions=(
            "You are a personal trading assistant focused on Microsoft (MSFT). "
            "You manage my portfolio and take actions based on market data. "
            "Use stop-loss orders to manage risk."
        ),
        tools=[
            get_stock_price,
            get_market_sentiment,
            get_portfolio_balance,
            execute_trade,
            set_stop_loss,
        ],
    )

    google_agent = Agent(
        client=trader_client("GOOGL", 35, 126.0),
        name="GoogleAgent",
        instructions=(
            "You are a personal trading assistant focused on Google (GOOGL). "
            "You manage my trades and portfolio based on market conditions. "
            "Use stop-loss orders to manage risk."
        ),
        tools=[
            get_stock_price,
            get_market_sentiment,
            get_portfolio_balance,
            execute_trade,
            set_stop_loss,
        ],
    )

    # 4. Build a concurrent workflow with both agents
    workflow = ConcurrentBuilder(participants=[microsoft_agent, google_agent]).build()

    # 5. Start the workflow - both agents will process the same task in parallel
    print("Starting concurrent workflow with tool approval...")
    print("-" * 60)

    # Initiate the first run of the workflow.
    # Runs are not isolated; state is preserved across multiple calls to run.
    stream = workflow.run(
        "Manage my portfolio. Use a max of 5000 dollars to adjust my position using "
        "your best judgment based on market sentiment. Set stop-loss orders to manage risk. "
        "No need to confirm trades with me.",
        stream=True,
    )

    pending_responses = await process_event_stream(stream)
    while pending_responses is not None:
        # Run the workflow until there is no more human feedback to provide,
        # in which case this workflow completes.
        stream = workflow.run(stream=True, responses=pending_responses)
        pending_responses = await process_event_stream(stream)


if __name__ == "__main__":
    asyncio.run(main())
