"""Port of MAF's ``samples/03-workflows/functional/basic_streaming_pipeline.py``: the same kind
of pipeline, run with ``stream=True``; the caller picks the ``output`` event from the stream
and then asks the stream for the final result.

Adapted to MAF 1.23: ``data_pipeline.run(...)`` is ``data_pipeline.build().run(...)``.
"""

import asyncio

from workflows import workflow


async def fetch_data(url: str) -> dict[str, str | int]:
    """Simulate fetching data from a URL."""
    return {"url": url, "content": f"Data from {url}", "status": 200}


async def transform_data(data: dict[str, str | int]) -> str:
    """Transform raw data into a summary string."""
    return f"[{data['status']}] {data['content']}"


async def validate_result(summary: str) -> bool:
    """Validate the transformed result."""
    return len(summary) > 0 and "[200]" in summary


@workflow
async def data_pipeline(url: str) -> str:
    """A simple sequential data pipeline."""
    raw = await fetch_data(url)
    summary = await transform_data(raw)
    is_valid = await validate_result(summary)

    return f"{summary} (valid={is_valid})"


async def main():
    # The stream yields lifecycle events (started, status) beside the output: filter by type.
    stream = data_pipeline.build().run("https://example.com/api/data", stream=True)
    async for event in stream:
        if event.type == "output":
            print(f"Output: {event.data}")

    # After the iteration, the stream's final response is the WorkflowRunResult.
    result = await stream.get_final_response()
    print(f"Final state: {result.get_final_state()}")


if __name__ == "__main__":
    asyncio.run(main())
