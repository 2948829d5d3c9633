"""Port of MAF's ``samples/03-workflows/functional/parallel_pipeline.py``: a fan-out to three
research helpers with ``asyncio.gather``, then a fan-in that combines their results.

Adapted to MAF 1.23: ``research_pipeline.run(...)`` is ``research_pipeline.build().run(...)``.
The helpers' 50 ms sleeps are kept short (they stand for I/O).
"""

import asyncio

from workflows import workflow


# asyncio.gather gives the concurrency; no framework primitive is needed.
async def research_web(topic: str) -> str:
    """Simulate web research."""
    await asyncio.sleep(0.01)
    return f"Web results for '{topic}': 10 articles found"


async def research_papers(topic: str) -> str:
    """Simulate academic paper search."""
    await asyncio.sleep(0.01)
    return f"Papers on '{topic}': 3 relevant papers"


async def research_news(topic: str) -> str:
    """Simulate news search."""
    await asyncio.sleep(0.01)
    return f"News about '{topic}': 5 recent articles"


async def synthesize(sources: list[str]) -> str:
    """Combine research results into a summary."""
    return "Research Summary:\n" + "\n".join(f"  - {s}" for s in sources)


@workflow
async def research_pipeline(topic: str) -> str:
    """Fan-out to three research tasks, then synthesize results."""
    # Standard Python concurrency; with @step on the branches each would be saved on its own.
    web, papers, news = await asyncio.gather(
        research_web(topic),
        research_papers(topic),
        research_news(topic),
    )

    return await synthesize([web, papers, news])


async def main():
    result = await research_pipeline.build().run("AI agents")
    print(result.get_outputs()[0])


if __name__ == "__main__":
    asyncio.run(main())
